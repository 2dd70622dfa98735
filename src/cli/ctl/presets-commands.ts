import { admin } from "../../client/index.js";
import type { Command } from "commander";
import { formatGiB } from "../../plan/light.js";
import type { AddedModelView, PresetProfileView, PresetView } from "../../protocol/index.js";
import { describeSourcesChecked } from "./add-model.js";
import { print, printJson, renderTable } from "../output.js";
import { apiClient, ctlOptions } from "./context.js";
import { describeModel } from "./model-text.js";

/** "1× H100" or "cpu": what a replica would take. */
function takes(runsOn: NonNullable<PresetView["runs_on"]>): string {
  return runsOn.gpu_class === null ? "cpu" : `${runsOn.cards.length}× ${runsOn.gpu_class.toUpperCase()}`;
}

/** One profile's needs in a few words: "gpu: 1 card × 18.4 GiB" or "cpu: 16.0 GiB, 8 cores". */
function profileNeeds(profile: PresetProfileView): string {
  if (profile.gpus > 0) {
    const perCard = profile.bytes_per_card !== null ? ` × ${formatGiB(profile.bytes_per_card)}` : " (size unknown)";
    return `${profile.name}: ${profile.gpus} ${profile.gpus === 1 ? "card" : "cards"}${profile.gpu_class ? ` ${profile.gpu_class}` : ""}${perCard}`;
  }
  const memory = profile.memory_bytes !== null ? formatGiB(profile.memory_bytes) : "memory unset";
  return `${profile.name}: ${memory}${profile.cpu_cores !== null ? `, ${profile.cpu_cores} ${profile.cpu_cores === 1 ? "core" : "cores"}` : ""}`;
}

/** The checkpoint sizes of its profiles, largest first: "15.2 GiB / 4.4 GiB". */
function sizes(preset: PresetView): string {
  const known = [...new Set(preset.profiles.flatMap((profile) => (profile.weights_bytes !== null ? [profile.weights_bytes] : [])))].sort((a, b) => b - a);
  return known.length > 0 ? known.map(formatGiB).join(" / ") : "unknown";
}

/** "yes on cpu-node (built-in, cpu build)": whether it answers for real on a CPU of the fleet; "-" with no CPU profile. */
function realOnCpu(preset: PresetView): string {
  const cpu = preset.on_cpu;
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- an older server's answer lacks it
  if (cpu === null || cpu === undefined) return "-";
  if (cpu.node === null) return "no (below)";
  const engine = cpu.llama_cpp === null ? "llama.cpp" : cpu.llama_cpp.kind === "llama-server" ? "llama-server" : `built-in, ${cpu.llama_cpp.build} build`;
  return `yes on ${cpu.node} (${engine})`;
}

export function renderPresets(presets: readonly PresetView[]): string {
  const table = renderTable(
    ["NAME", "TASKS", "SIZE", "NEEDS", "LICENCE", "FITS", "REAL ON CPU"],
    presets.map((preset) => [
      preset.name,
      preset.tasks.join(","),
      sizes(preset),
      preset.profiles.map(profileNeeds).join("; "),
      preset.licence.name,
      preset.runs_on ? `yes on ${preset.runs_on.node} (${takes(preset.runs_on)})` : "no (below)",
      realOnCpu(preset),
    ]),
  );
  // Reasons are long (one per profile), so they go under the table rather than in it.
  const notes = presets.flatMap((preset) => {
    const lines: string[] = [];
    if (!preset.runs_on) lines.push(`${preset.name}: no: ${preset.why_not ?? "no reason given"}`);
    for (const profile of preset.profiles) if (profile.unreadable) lines.push(`${preset.name}/${profile.name}: the source could not be read: ${profile.unreadable}`);
    if (preset.added_as.length > 0) lines.push(`${preset.name}: in the catalog as ${preset.added_as.join(", ")}`);
    return lines;
  });
  // One line per reason: on a fleet with no real llama.cpp every CPU preset has the same one.
  const notOnCpu = new Map<string, string[]>();
  for (const preset of presets) if (preset.on_cpu?.why_not) notOnCpu.set(preset.on_cpu.why_not, [...(notOnCpu.get(preset.on_cpu.why_not) ?? []), preset.name]);
  for (const [why, names] of notOnCpu) notes.push(`${names.join(", ")}: not for real on a CPU now: ${why}`);
  return notes.length > 0 ? `${table}\n\n${notes.join("\n")}` : table;
}

/** `ctl model presets`: the presets shipped with llmgw, what each needs and where it would run now. */
export function registerPresetCommands(ctl: Command): void {
  const model = ctl.commands.find((command) => command.name() === "model") as Command;
  model
    .command("presets")
    .description("the model presets shipped with llmgw: tasks, size, what each needs, licence, and whether the live fleet can run it now and on what")
    .option("--json", "print the API's JSON ({presets: [...]})")
    .action(async (_options, command: Command) => {
      const result = await apiClient(ctlOptions(command)).send(admin.presets());
      if (ctlOptions(command).json) return printJson(result);
      print(renderPresets(result.presets));
      print("\nAdd one with `llmgw ctl model add PRESET [--name NAME]`.");
    });
}

/** `ctl model add PRESET [--name N]`: adds a shipped preset through the API and prints the model as added. */
export async function addPreset(command: Command, preset: string, name: string | undefined, options: { sourceCheck: boolean; keepUnplaceable?: boolean | undefined }): Promise<AddedModelView> {
  const query = { ...(options.sourceCheck ? {} : { source_check: false as const }), ...(options.keepUnplaceable === true ? { keep_unplaceable: true as const } : {}) };
  const added = await apiClient(ctlOptions(command)).send(admin.addPreset(preset, name !== undefined ? { name } : {}, query));
  if (ctlOptions(command).json) printJson(added);
  else print(`Added ${added.name} from preset ${preset}.\n${describeModel(added)}\n\n${describeSourcesChecked(added)}`);
  return added;
}
