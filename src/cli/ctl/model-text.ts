import type { ModelView, ProfileView } from "../../protocol/views.js";

/** One profile in a few words: how it runs and on what. */
export function describeProfile(profile: ProfileView): string {
  const hardware = profile.gpus > 0 ? `${profile.gpus} card${profile.gpus > 1 ? "s" : ""}${profile.gpu_class ? ` (${profile.gpu_class})` : ""}` : "CPU";
  const extras = [
    profile.quantization ?? undefined,
    profile.cpu_cores !== null ? `${profile.cpu_cores} cores` : undefined,
    profile.memory_gb !== null ? `${profile.memory_gb} GB host memory` : undefined,
    profile.engine === "llamacpp" ? `${profile.slots} slot${profile.slots > 1 ? "s" : ""}` : undefined,
    // Absent from an older server's answer, hence the fallback.
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- an older server's answer lacks it
    ...Object.entries(profile.secret_env ?? {}).map(([name, serverVariable]) => `${name} from $${serverVariable} on the server`),
  ].filter((part): part is string => part !== undefined);
  return `${profile.name}: ${profile.engine} on ${hardware}${extras.length ? `, ${extras.join(", ")}` : ""}`;
}

export function describeScaling(model: ModelView): string {
  const { min, max, idle_timeout: idleTimeout } = model.scaling;
  if (max === 0) return "min 0, max 0 (kept in the catalog, never placed)";
  const onDemand = min === 0 ? `, on demand: starts at the first request, stops after ${idleTimeout} idle` : "";
  return `min ${min}, max ${max}${onDemand}`;
}

/** A model as it is now in force, for the person at the terminal. */
export function describeModel(model: ModelView): string {
  const rows: [string, string][] = [
    ["state", `${model.state}, ${model.replicas.ready} of ${model.replicas.desired} replicas ready`],
    ["class", `${model.class}${model.class_set ? "" : " (the default for its scaling)"}`],
  ];
  if (!model.external) rows.push(["scaling", describeScaling(model)]);
  if (model.placement && model.placement.state !== "placed") rows.push(["placement", `${model.placement.state}${model.placement.reason ? `: ${model.placement.reason}` : ""}`]);
  if (model.last_failure) {
    const retry = model.last_failure.retry_at ? `; next start at ${model.last_failure.retry_at}` : "";
    rows.push(["last failure", `${model.last_failure.at} (${model.last_failure.failures} in a row${retry}): ${model.last_failure.reason.split("\n")[0]}`]);
  }
  if (model.origin) rows.push(["origin", model.origin]);
  if (model.preset) rows.push(["preset", `${model.preset} (shipped with llmgw: \`ctl model presets\`)`]);
  if (model.context !== null) rows.push(["context", `${model.context} tokens${model.max_output !== null ? `, answers up to ${model.max_output}` : ""}`]);
  rows.push(["owner", model.owner ?? "(none)"]);
  rows.push(["fallbacks", model.fallbacks.length ? model.fallbacks.join(", ") : "(none)"]);
  if (model.aliases.length) rows.push(["aliases", model.aliases.join(", ")]);
  if (model.adapters.length) rows.push(["adapters", model.adapters.map((adapter) => adapter.name).join(", ")]);
  if (model.external) rows.push(["external", `${model.external.base_url}${model.external.api_key_env ? ` (key from $${model.external.api_key_env} on the server)` : ""}`]);
  model.profiles.forEach((profile, index) => rows.push([index === 0 ? "profiles" : "", describeProfile(profile)]));
  const width = Math.max(...rows.map(([label]) => label.length));
  return [`${model.name} (${model.source === "file" ? `declared in ${model.declared_in ?? "server.yaml"}` : "added at runtime"})`, ...rows.map(([label, value]) => `  ${label.padEnd(width)}  ${value}`)].join("\n");
}

export function profileSummary(model: ModelView): string {
  if (model.external) return `external (${new URL(model.external.base_url).host})`;
  return model.profiles.map((profile) => `${profile.engine}(${profile.gpus > 0 ? `${profile.gpus}×${profile.gpu_class ?? "gpu"}` : "cpu"})`).join(", ");
}
