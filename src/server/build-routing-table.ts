import { type CatalogModel, parseDuration } from "../catalog/index.js";
import { poolingRunner, replicaServesMessages, type RoutingModel, type RoutingReplica, type RoutingTable } from "../protocol/index.js";

/** How long a request waits for a first ready replica when the model does not say: long enough for a GPU engine to load. */
export const defaultQueueTimeoutMs = 120_000;

export interface ReplicaForRouting {
  readonly id: string;
  readonly model: string;
  readonly node: string;
  readonly state: string;
  readonly endpoint: string | null;
  readonly api_key: string | undefined;
  readonly arm?: "stable" | "canary";
  /** When it entered its state, and how far its weights are fetched: the loading estimate reads both. */
  readonly since?: string;
  readonly progress?: { readonly fraction: number } | null;
  /** The engine, and for llama.cpp which one the node runs: whether it serves /v1/messages itself follows from both. */
  readonly engine?: string;
  readonly llama_cpp?: { readonly kind: "llama-server" | "built-in" } | null;
}

/** The reconciler's latest placement decision of a model, from its status row. */
export interface PlacementForRouting {
  readonly state: "placed" | "waiting" | "unplaceable";
  readonly reason: string | null;
}

/** What an engine takes to load once its weights are on the node, when nothing better is known: a GPU engine's load of a mid-sized model. */
const engineLoadAllowanceS = 20;
const loadingStates = new Set(["pending", "fetching", "starting"]);

/**
 * Seconds until the soonest of a model's loading replicas is ready: a fetch
 * in progress goes on at the rate it went so far, then the engine loads; a
 * replica starting its engine has the allowance less what it already spent.
 */
function loadingEtaSeconds(replicas: readonly ReplicaForRouting[], now: number): number | undefined {
  const estimates = replicas.flatMap((replica) => {
    if (!loadingStates.has(replica.state)) return [];
    const elapsedS = replica.since === undefined ? 0 : Math.max(0, (now - Date.parse(replica.since)) / 1000);
    const fraction = replica.progress?.fraction;
    if (replica.state === "fetching" && fraction !== undefined && fraction > 0 && fraction < 1) return [(elapsedS * (1 - fraction)) / fraction + engineLoadAllowanceS];
    if (replica.state === "starting") return [Math.max(engineLoadAllowanceS - elapsedS, 5)];
    return [engineLoadAllowanceS];
  });
  return estimates.length === 0 ? undefined : Math.max(1, Math.ceil(Math.min(...estimates)));
}

/**
 * Each model's loading estimate, for the models with a replica loading. The
 * table's one part that moves with a fetch's progress and the clock alone:
 * the routing table source refreshes it by itself while nothing else changed.
 */
export function loadingEtas(replicas: readonly ReplicaForRouting[], now: number): Map<string, number> {
  // Grouped once: a filter per model is quadratic at thousands of models.
  const loadingByModel = new Map<string, ReplicaForRouting[]>();
  for (const replica of replicas) {
    if (!loadingStates.has(replica.state)) continue;
    const list = loadingByModel.get(replica.model);
    if (list) list.push(replica);
    else loadingByModel.set(replica.model, [replica]);
  }
  const etas = new Map<string, number>();
  for (const [model, loading] of loadingByModel) {
    const eta = loadingEtaSeconds(loading, now);
    if (eta !== undefined) etas.set(model, eta);
  }
  return etas;
}

/** Why no replica of the model will come: kept at 0/0, or refused by placement with none running. */
function unavailableReason(model: CatalogModel, placement: PlacementForRouting | undefined, routed: number): string | undefined {
  if (model.entry.external) return undefined;
  if (model.scaling.min === 0 && model.scaling.max === 0) {
    return `${model.name} is kept unplaced on purpose (scaling min 0, max 0); \`llmgw ctl scale ${model.name} --max 1\` lets a request start it`;
  }
  if (placement?.state === "unplaceable" && routed === 0) return `placement cannot place ${model.name}: ${placement.reason ?? "no node has room"}`;
  return undefined;
}

/**
 * The routing table's content (everything but the revision) from the catalog
 * and the fleet, pure. Replicas that are not ready or draining, or have no
 * endpoint, are left out: the gateway never sends to what cannot answer.
 */
export function buildRoutingTable(
  models: readonly CatalogModel[],
  replicas: readonly ReplicaForRouting[],
  canaryWeights: ReadonlyMap<string, number> = new Map(),
  placements: ReadonlyMap<string, PlacementForRouting> = new Map(),
  now: number = Date.now(),
): Omit<RoutingTable, "revision"> {
  const byModel = new Map<string, RoutingReplica[]>();
  for (const replica of replicas) {
    if ((replica.state !== "ready" && replica.state !== "draining") || replica.endpoint === null) continue;
    // A canary's replica serves only while its canary runs: once aborted, not one more request reaches it,
    // even in the moment before the reconciler withdraws it.
    if (replica.arm === "canary" && !canaryWeights.has(replica.model)) continue;
    const list = byModel.get(replica.model) ?? [];
    list.push({
      id: replica.id,
      node: replica.node,
      endpoint: replica.endpoint.replace(/\/$/, ""),
      state: replica.state,
      ...(replica.api_key !== undefined ? { api_key: replica.api_key } : {}),
      ...(replica.arm === "canary" ? { arm: "canary" as const } : {}),
      ...(replica.engine !== undefined && replicaServesMessages(replica.engine, replica.llama_cpp) ? { serves_messages: true } : {}),
    });
    byModel.set(replica.model, list);
  }
  const etas = loadingEtas(replicas, now);
  const aliases: Record<string, string> = {};
  const routed: RoutingModel[] = models.map((model) => {
    for (const alias of model.aliases) aliases[alias] = model.name;
    const { entry } = model;
    const firstProfile = model.profiles[0];
    const modelReplicas = byModel.get(model.name) ?? [];
    const unavailable = unavailableReason(model, placements.get(model.name), modelReplicas.length);
    const pooling = firstProfile ? poolingRunner(firstProfile.engine, firstProfile.args) : undefined;
    const eta = etas.get(model.name);
    return {
      name: model.name,
      context: entry.context ?? null,
      max_output: entry.max_output ?? null,
      fallbacks: [...model.fallbacks],
      on_demand: model.scaling.min === 0 && model.scaling.max > 0,
      queue_timeout_ms: entry.queue_timeout !== undefined ? (parseDuration(entry.queue_timeout) ?? defaultQueueTimeoutMs) : defaultQueueTimeoutMs,
      routing: entry.routing ?? "least",
      engine: firstProfile?.engine ?? null,
      external: entry.external ? { base_url: entry.external.base_url, api_key_env: entry.external.api_key_env ?? null, model: entry.external.model ?? null } : null,
      tokenizer: firstProfile ? tokenizerLocation(firstProfile.source) : null,
      adapters: (entry.adapters ?? []).map((adapter, index) => ({ name: adapter.name, index, scale: adapter.scale ?? null })),
      replicas: modelReplicas,
      comfy: firstProfile?.comfy ? { workflow: firstProfile.comfy.workflow, inputs: { ...firstProfile.comfy.inputs }, outputs: firstProfile.comfy.outputs } : null,
      ...(pooling !== undefined ? { pooling: { flag: pooling.flag, routes: [...pooling.routes] } } : {}),
      ...(canaryWeights.has(model.name) ? { canary_weight: canaryWeights.get(model.name) } : {}),
      ...(unavailable !== undefined ? { unavailable } : {}),
      ...(eta !== undefined ? { loading_eta_s: eta } : {}),
    };
  });
  return { models: routed, aliases };
}

/** Where the model's tokenizer files may be: the source itself when it is a folder or file the gateway can read. */
function tokenizerLocation(source: string): string | null {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(source)) return source.startsWith("file://") ? new URL(source).pathname : source;
  return source;
}
