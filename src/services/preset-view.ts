import { resolveModel, type ResolvedProfile, type Preset } from "../catalog/index.js";
import { demandBytesPerCard, demandProfile, placeReplicas, type Snapshot } from "../placement/index.js";
import type { ModelFacts } from "../plan/index.js";
import type { NodeLlamaCppView, PresetCpuView, PresetProfileView, PresetView } from "../protocol/index.js";

/**
 * Whether the planner reads this profile's source: ComfyUI's is a workflow
 * and its model files, which it does not model (placement then checks the
 * card count alone, as it does for such a model in the catalog).
 */
export function plannerReads(profile: { readonly engine: string }): boolean {
  return profile.engine !== "comfyui";
}

/** What the planner read of each source: its facts, or why it could not read them. */
export type SourceFacts = ReadonlyMap<string, ModelFacts | { readonly unreadable: string }>;

/** The size of each ComfyUI file the presets load, or why it could not be read. */
export type FileSizes = ReadonlyMap<string, number | { readonly unreadable: string }>;

/**
 * A ComfyUI profile's size: the sum of its workflow's files. That sum is
 * also what its card must hold: ComfyUI's default (normal VRAM) mode keeps
 * every loaded model of the workflow on the card, and a card that cannot
 * hold them makes it offload to host memory, many times slower; the
 * activations on top are small beside them at the presets' image sizes.
 * Unknown (with the first reason) when any file could not be read.
 */
function comfyFilesBytes(files: readonly { readonly source: string }[], sizes: FileSizes): { bytes: number | null; unreadable: string | null } {
  let bytes = 0;
  for (const file of files) {
    const size = sizes.get(file.source);
    if (size === undefined) return { bytes: null, unreadable: null };
    if (typeof size !== "number") return { bytes: null, unreadable: `${file.source}: ${size.unreadable}` };
    bytes += size;
  }
  return { bytes, unreadable: null };
}

/** What a profile's view says whoever reads its weights. */
function profileBasics(profile: ResolvedProfile) {
  return {
    name: profile.name,
    engine: profile.engine,
    source: profile.source,
    gpu_class: profile.gpu_class ?? null,
    gpus: profile.gpus,
    quantization: profile.quantization ?? null,
    memory_bytes: profile.memory_gb !== undefined ? Math.round(profile.memory_gb * 1024 ** 3) : null,
    cpu_cores: profile.cpu_cores ?? null,
  } satisfies Partial<PresetProfileView>;
}

export interface PresetViewInput {
  readonly facts: SourceFacts;
  readonly fileSizes: FileSizes;
  /** The live fleet, with what its replicas hold. */
  readonly snapshot: Snapshot;
  /** Catalog models added from this preset. */
  readonly addedAs: readonly string[];
  readonly gpuMemoryUtilization: number;
  /** The nodes that run llama.cpp for real (not simulated), with the llama.cpp each has; none when omitted. */
  readonly realLlamaCpp?: ReadonlyMap<string, NodeLlamaCppView>;
}

/**
 * A preset as `ctl model presets` shows it: what each profile needs, by the
 * planner's arithmetic on the checkpoint's own files at the preset's
 * context, and where one replica would run now, by placement itself over the
 * live fleet (profiles in order, the first that fits). Pure.
 */
export function presetView(preset: Preset, input: PresetViewInput): PresetView {
  const model = resolveModel(preset.model, "runtime");
  const context = preset.model.context;
  const profiles: PresetProfileView[] = model.profiles.map((profile) => {
    const read = plannerReads(profile) ? input.facts.get(profile.source) : undefined;
    const facts = read && "architecture" in read ? read : undefined;
    const onCpu = profile.gpus === 0;
    if (profile.engine === "comfyui") {
      const files = comfyFilesBytes(profile.comfy?.files ?? [], input.fileSizes);
      return { ...profileBasics(profile), weights_bytes: files.bytes, bytes_per_card: onCpu ? null : files.bytes, planned_memory_bytes: onCpu ? files.bytes : null, unreadable: files.unreadable };
    }
    return {
      ...profileBasics(profile),
      weights_bytes: facts ? facts.checkpoint.bytes : null,
      bytes_per_card: facts && !onCpu ? (demandBytesPerCard(facts, profile, context) ?? null) : null,
      // A CPU replica holds what one llama.cpp rank would: the weights, the runtime and every slot's KV cache.
      planned_memory_bytes: facts && onCpu && profile.engine === "llamacpp" ? (demandBytesPerCard(facts, { ...profile, gpus: 1 }, context) ?? null) : null,
      unreadable: read && "unreadable" in read ? read.unreadable : null,
    };
  });
  const demands = model.profiles.map((profile, index) => demandProfile(profile, profiles[index]?.bytes_per_card ?? undefined));
  const result = placeReplicas(input.snapshot, [{ model: preset.name, modelClass: model.class, count: 1, profiles: demands }], {
    gpuMemoryUtilization: input.gpuMemoryUtilization,
  });
  const placed = result.placements[0];
  const node = placed ? input.snapshot.nodes.find((candidate) => candidate.name === placed.node) : undefined;
  const firstCard = placed?.cards[0];
  return {
    name: preset.name,
    description: preset.preset.description,
    licence: { ...preset.preset.licence },
    tasks: [...preset.preset.tasks],
    added_as: [...input.addedAs],
    profiles,
    runs_on: placed
      ? {
          profile: placed.profile,
          node: placed.node,
          cards: [...placed.cards],
          gpu_class: firstCard !== undefined ? (node?.cards.find((card) => card.index === firstCard)?.cardClass ?? null) : null,
        }
      : null,
    why_not: placed ? null : (result.refusals[0]?.reason ?? (input.snapshot.nodes.length === 0 ? "no node has joined" : "placement gave no reason")),
    on_cpu: onCpu(preset.name, model, profiles, input),
  };
}

/**
 * Whether the preset's CPU profiles answer for real on the fleet now:
 * placement over the nodes that run llama.cpp for real alone, so a simulated
 * node (whose llamacpp is the simulated engine) never makes a preset look
 * runnable, and the host memory and cores are the ones placement counts.
 */
function onCpu(name: string, model: ReturnType<typeof resolveModel>, profiles: readonly PresetProfileView[], input: PresetViewInput): PresetCpuView | null {
  const cpuProfiles = model.profiles.flatMap((profile, index) => (profile.engine === "llamacpp" && profile.gpus === 0 ? [{ profile, index }] : []));
  const first = cpuProfiles[0];
  if (first === undefined) return null;
  const real = input.realLlamaCpp ?? new Map<string, NodeLlamaCppView>();
  const nodes = input.snapshot.nodes.filter((node) => real.has(node.name));
  if (nodes.length === 0) {
    const why = input.snapshot.nodes.length === 0 ? "no node has joined" : "no node runs llama.cpp for real (a simulated node's engines pretend; an agent without --simulate has the built-in engine or llama-server)";
    return { profile: first.profile.name, node: null, llama_cpp: null, why_not: why };
  }
  const demands = cpuProfiles.map(({ profile, index }) => demandProfile(profile, profiles[index]?.bytes_per_card ?? undefined));
  const result = placeReplicas({ ...input.snapshot, nodes }, [{ model: name, modelClass: model.class, count: 1, profiles: demands }], { gpuMemoryUtilization: input.gpuMemoryUtilization });
  const placed = result.placements[0];
  if (!placed) return { profile: first.profile.name, node: null, llama_cpp: null, why_not: result.refusals[0]?.reason ?? "placement gave no reason" };
  return { profile: placed.profile, node: placed.node, llama_cpp: real.get(placed.node) ?? null, why_not: null };
}
