import { ggufFileTypes } from "./ggml-types.js";
import { sourceFormProblem } from "./weights-source.js";
import {
  adapterEngines,
  gpuOnlyEngines,
  gpuQuantizations,
  multiNodeEngines,
  singleCardEngines,
  type EngineName,
  type ModelClass,
  type ModelEntry,
  type ProfileInput,
} from "./schema.js";
import type { ErrorDetail } from "../errors/index.js";
import type { ComfySettings } from "./comfy-schema.js";

/** Where a model's definition lives: server.yaml (read at every start) or the store (added at runtime). */
export type ModelSource = "file" | "runtime";

/** A profile with every default filled in: what the planner, placement and drivers act on. */
export interface ResolvedProfile {
  readonly name: string;
  readonly engine: EngineName;
  readonly source: string;
  readonly gpu_class: string | undefined;
  /** Cards per node. */
  readonly gpus: number;
  /** Nodes one replica spans, each giving `gpus` cards (1 for a replica on one node). */
  readonly nodes: number;
  readonly quantization: string | undefined;
  readonly memory_gb: number | undefined;
  readonly cpu_cores: number | undefined;
  readonly slots: number;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  /** Engine variable → the server's variable it is read from when a replica starts (names only, never values). */
  readonly secret_env: Readonly<Record<string, string>>;
  /** A ComfyUI profile's workflow, files and custom nodes; undefined for every other engine. */
  readonly comfy: ComfySettings | undefined;
}

export interface Scaling {
  readonly min: number;
  readonly max: number;
  /** As written (`10m`), so it round-trips through YAML. */
  readonly idle_timeout: string;
}

/** A model as it is in force: the entry as written, and the values the catalog filled in. */
export interface CatalogModel {
  readonly name: string;
  readonly source: ModelSource;
  /** The entry exactly as written, for export and for moving between file and runtime. */
  readonly entry: ModelEntry;
  readonly class: ModelClass;
  /** False when the class is the default for the model's scaling (opportunistic for on-demand, standard otherwise). */
  readonly class_set: boolean;
  readonly scaling: Scaling;
  readonly fallbacks: readonly string[];
  readonly aliases: readonly string[];
  readonly profiles: readonly ResolvedProfile[];
}

export const defaultIdleTimeout = "10m";

/** The class in force when none is set: on-demand models give way to everything else. */
export function defaultClass(scaling: Pick<Scaling, "min" | "max">): ModelClass {
  return scaling.min === 0 && scaling.max > 0 ? "opportunistic" : "standard";
}

/**
 * Fills in what the entry leaves out. `min` defaults to 1 (a model in the
 * catalog runs unless told otherwise, like one replica in GPUStack); `max`
 * defaults to `min` (no growth unless asked for), or 1 for an on-demand model.
 */
export function resolveScaling(scaling: ModelEntry["scaling"]): Scaling {
  const min = scaling?.min ?? 1;
  const max = scaling?.max ?? Math.max(min, 1);
  return { min, max, idle_timeout: scaling?.idle_timeout ?? defaultIdleTimeout };
}

export function resolveProfiles(profiles: readonly ProfileInput[]): ResolvedProfile[] {
  const used = new Map<string, number>();
  return profiles.map((profile) => {
    const count = (used.get(profile.engine) ?? 0) + 1;
    used.set(profile.engine, count);
    const defaultName = count === 1 ? profile.engine : `${profile.engine}-${count}`;
    // llama.cpp runs on the CPU unless the profile asks for a GPU class;
    // every other engine needs at least one card.
    const defaultGpus = profile.engine === "llamacpp" && profile.gpu_class === undefined ? 0 : 1;
    return {
      name: profile.name ?? defaultName,
      engine: profile.engine,
      source: profile.source,
      gpu_class: profile.gpu_class,
      gpus: profile.gpus ?? defaultGpus,
      nodes: profile.nodes ?? 1,
      quantization: profile.quantization,
      memory_gb: profile.memory_gb,
      cpu_cores: profile.cpu_cores,
      slots: profile.slots ?? 1,
      args: profile.args ?? [],
      env: profile.env ?? {},
      secret_env: profile.secret_env ?? {},
      comfy: profile.comfy,
    };
  });
}

export function resolveModel(entry: ModelEntry, source: ModelSource): CatalogModel {
  const scaling = resolveScaling(entry.scaling);
  return {
    name: entry.name,
    source,
    entry,
    class: entry.class ?? defaultClass(scaling),
    class_set: entry.class !== undefined,
    scaling,
    fallbacks: entry.fallbacks ?? [],
    aliases: entry.aliases ?? [],
    profiles: resolveProfiles(entry.profiles ?? []),
  };
}

/** Why an engine cannot run one replica over several nodes here, with what can. */
export function notMultiNode(engine: string): string {
  const why: Record<string, string> = {
    llamacpp: "llama.cpp spans machines only through its RPC servers, which llmgw does not run",
    trtllm: "TensorRT-LLM spans machines through MPI launchers, which llmgw does not run",
    comfyui: "ComfyUI runs a workflow on one card",
  };
  return `${why[engine] ?? `${engine} does not span nodes`}; use ${multiNodeEngines.join(" or ")} (or nodes: 1)`;
}

/**
 * Problems within one entry that the schema cannot see: rules that depend on
 * the engine, on two fields together, or on defaults. Paths are relative to
 * the entry.
 */
export function checkEntry(entry: ModelEntry): { path: (string | number)[]; message: string; code: "invalid_profile" | "invalid_input" }[] {
  const problems: { path: (string | number)[]; message: string; code: "invalid_profile" | "invalid_input" }[] = [];
  const hasProfiles = (entry.profiles?.length ?? 0) > 0;
  if (entry.external && hasProfiles) {
    problems.push({ path: ["external"], code: "invalid_input", message: "a model is either external (proxied) or has profiles (run here), not both; remove one" });
  }
  if (!entry.external && !hasProfiles) {
    problems.push({ path: ["profiles"], code: "invalid_input", message: "required: at least one profile (how to run the model), or external: {base_url} to proxy it" });
  }
  const scaling = entry.scaling;
  // Compared after defaults: `max: 0` alone leaves min at its default of 1.
  const inForce = resolveScaling(scaling);
  if (inForce.max < inForce.min) {
    const minText = scaling?.min === undefined ? `${inForce.min}, the default` : String(inForce.min);
    problems.push({
      path: ["scaling", "max"],
      code: "invalid_input",
      message: `must be at least min (${minText}); max is the ceiling for growth (min: 0, max: 0 keeps a model in the catalog unplaced)`,
    });
  }
  if (entry.context !== undefined && entry.max_output !== undefined && entry.max_output > entry.context) {
    problems.push({ path: ["max_output"], code: "invalid_input", message: `cannot exceed context (${entry.context}): an answer counts against the context` });
  }
  const sourceForm = (path: (string | number)[], source: string | undefined) => {
    const problem = source === undefined ? undefined : sourceFormProblem(source);
    if (problem !== undefined) problems.push({ path, code: "invalid_input", message: problem });
  };
  sourceForm(["origin"], entry.origin);
  for (const [index, adapter] of (entry.adapters ?? []).entries()) sourceForm(["adapters", index, "source"], adapter.source);
  const names = new Set<string>();
  for (const [index, profile] of resolveProfiles(entry.profiles ?? []).entries()) {
    const at = (field: string) => ["profiles", index, field];
    sourceForm(at("source"), profile.source);
    if (names.has(profile.name)) {
      problems.push({ path: at("name"), code: "invalid_input", message: `two profiles are named "${profile.name}"; give each a distinct name` });
    }
    names.add(profile.name);
    if (gpuOnlyEngines.includes(profile.engine) && profile.gpus < 1) {
      problems.push({ path: at("gpus"), code: "invalid_profile", message: `${profile.engine} runs on GPUs only: 1 or more cards (use engine: llamacpp to run on CPUs)` });
    }
    if (singleCardEngines.includes(profile.engine) && profile.gpus > 1) {
      problems.push({ path: at("gpus"), code: "invalid_profile", message: `${profile.engine} uses one card; set gpus: 1` });
    }
    if (profile.nodes > 1 && !multiNodeEngines.includes(profile.engine)) {
      problems.push({ path: at("nodes"), code: "invalid_profile", message: notMultiNode(profile.engine) });
    }
    if (profile.nodes > 1 && profile.gpus < 1) {
      problems.push({ path: at("gpus"), code: "invalid_profile", message: `a replica over ${profile.nodes} nodes takes cards on each: 1 or more per node` });
    }
    if (profile.engine === "comfyui" && profile.comfy === undefined) {
      problems.push({ path: at("comfy"), code: "invalid_profile", message: "required for engine comfyui: the workflow (API format), where requests fill it in, and its files" });
    }
    if (profile.engine !== "comfyui" && profile.comfy !== undefined) {
      problems.push({ path: at("comfy"), code: "invalid_profile", message: `a ComfyUI workflow runs on engine comfyui only, and this profile's engine is ${profile.engine}` });
    }
    if ((entry.adapters?.length ?? 0) > 0 && !adapterEngines.includes(profile.engine)) {
      problems.push({
        path: at("engine"),
        code: "invalid_profile",
        message: `${profile.engine} cannot attach LoRA adapters, and this model has adapters; use ${adapterEngines.join(", ")}, or move the adapters to a model without this profile`,
      });
    }
    for (const name of Object.keys(profile.secret_env)) {
      if (name in profile.env) {
        problems.push({ path: at("secret_env"), code: "invalid_input", message: `${name} is set in both env and secret_env; keep it in one (secret_env for a secret)` });
      }
    }
    if (profile.quantization !== undefined) {
      const allowed: readonly string[] = profile.engine === "llamacpp" ? ggufTypeNames : gpuQuantizations;
      if (!allowed.includes(profile.quantization)) {
        problems.push({ path: at("quantization"), code: "invalid_profile", message: `${profile.engine} takes one of ${allowed.join(", ")}` });
      }
    }
  }
  problems.push(...comfyProfilesProblems(entry));
  return problems;
}

/**
 * The gateway speaks one API per model (images or image to 3D, or text) and
 * fills in one workflow whichever replica answers, so a ComfyUI model's
 * profiles may differ in where they run and where their files come from,
 * not in the workflow.
 */
function comfyProfilesProblems(entry: ModelEntry): { path: (string | number)[]; message: string; code: "invalid_profile" }[] {
  const profiles = entry.profiles ?? [];
  const firstComfy = profiles.findIndex((profile) => profile.engine === "comfyui");
  if (firstComfy < 0) return [];
  const problems: { path: (string | number)[]; message: string; code: "invalid_profile" }[] = [];
  const first = profiles[firstComfy] as ProfileInput;
  for (const [index, profile] of profiles.entries()) {
    if (profile.engine !== "comfyui") {
      problems.push({ path: ["profiles", index, "engine"], code: "invalid_profile", message: `a ComfyUI model's profiles all run engine comfyui (profile ${firstComfy} does); put the ${profile.engine} profile in a model of its own` });
    } else if (index !== firstComfy && first.comfy !== undefined && profile.comfy !== undefined) {
      const same = JSON.stringify([first.comfy.workflow, first.comfy.inputs, first.comfy.outputs]) === JSON.stringify([profile.comfy.workflow, profile.comfy.inputs, profile.comfy.outputs]);
      if (!same) {
        problems.push({ path: ["profiles", index, "comfy"], code: "invalid_profile", message: `the workflow, inputs and outputs must be those of profile ${firstComfy}: the gateway fills in one workflow whichever replica answers (profiles may differ in files and where they run)` });
      }
    }
  }
  return problems;
}

/** Every GGUF file type llama.cpp writes (llama.h's llama_ftype), as people name them. */
const ggufTypeNames: readonly string[] = Object.values(ggufFileTypes);

export type { ErrorDetail };
