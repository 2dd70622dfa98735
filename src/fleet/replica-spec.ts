import { type CatalogModel, type ResolvedProfile, redactUrl, maskSecretEnv, resolveSecretEnv, sourceForAgents } from "../catalog/index.js";
import type { ReplicaSpec } from "../protocol/index.js";

export interface ReplicaSpecInput {
  readonly id: string;
  readonly model: CatalogModel;
  readonly profile: ResolvedProfile;
  readonly cards: readonly number[];
  /** A context asked for this replica; left out, the model's own. */
  readonly context?: number | undefined;
  /** The server's share of each card's memory the engine may take. */
  readonly gpuMemoryUtilization: number;
  readonly simulation?: ReplicaSpec["simulation"];
  /** The key only gateways hold, which the engine demands of every caller. */
  readonly apiKey?: string | undefined;
  /** The server's environment, where a profile's secret_env values are read; a variable missing there is refused, naming it. */
  readonly serverEnvironment: Readonly<Record<string, string | undefined>>;
  /** server.yaml's `mirror`, which `mirror:path` sources are resolved against before the agent sees them. */
  readonly mirror?: string | undefined;
  /** A member of a replica over several nodes: its rank, where the leader is met. */
  readonly distributed?: ReplicaSpec["distributed"];
}

/**
 * What an agent is told to run for one replica of a catalog model's profile:
 * everything the engine needs, copied out of the catalog so the agent never
 * reads the catalog and a later catalog change does not alter a running
 * replica's record.
 */
export function buildReplicaSpec(input: ReplicaSpecInput): ReplicaSpec {
  const { model, profile } = input;
  const context = input.context ?? model.entry.context;
  return {
    id: input.id,
    model: model.name,
    profile: profile.name,
    engine: profile.engine,
    source: sourceForAgents(profile.source, { mirror: input.mirror }),
    cards: [...input.cards],
    ...(context !== undefined ? { context } : {}),
    slots: profile.slots,
    ...(profile.cpu_cores !== undefined ? { cpu_cores: profile.cpu_cores } : {}),
    ...(profile.quantization !== undefined ? { quantization: profile.quantization } : {}),
    gpu_memory_utilization: input.gpuMemoryUtilization,
    args: [...profile.args],
    env: { ...profile.env, ...resolveSecretEnv(model.name, profile, input.serverEnvironment) },
    adapters: (model.entry.adapters ?? []).map((adapter) => ({ name: adapter.name, source: sourceForAgents(adapter.source, { mirror: input.mirror }), ...(adapter.scale !== undefined ? { scale: adapter.scale } : {}) })),
    ...(profile.comfy ? { comfy: { files: (profile.comfy.files ?? []).map((file) => ({ ...file, source: sourceForAgents(file.source, { mirror: input.mirror }) })), custom_nodes: (profile.comfy.custom_nodes ?? []).map((node) => ({ ...node })) } } : {}),
    ...(input.simulation ? { simulation: input.simulation } : {}),
    ...(input.apiKey !== undefined ? { api_key: input.apiKey } : {}),
    ...(input.distributed !== undefined ? { distributed: { ...input.distributed } } : {}),
  };
}

/**
 * A spec as it may be stored: the values secret_env brought in replaced by
 * the server variable's name, and URL passwords masked (a resolved `mirror:`
 * source carries the mirror's login from server.yaml), since the database is
 * not where secrets live. A stored spec is never sent again as it is: a
 * resumed start builds the spec anew from the catalog.
 */
export function storableReplicaSpec(spec: ReplicaSpec, profile: ResolvedProfile): ReplicaSpec {
  return {
    ...spec,
    source: redactUrl(spec.source),
    adapters: spec.adapters.map((adapter) => ({ ...adapter, source: redactUrl(adapter.source) })),
    env: maskSecretEnv(spec.env, profile.secret_env),
  };
}
