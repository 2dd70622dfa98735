import type { CatalogModel } from "../catalog/catalog-model.js";
import { parseDuration } from "../catalog/duration.js";
import type { RoutingModel, RoutingReplica, RoutingTable } from "../protocol/routing-table.js";

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
    });
    byModel.set(replica.model, list);
  }
  const aliases: Record<string, string> = {};
  const routed: RoutingModel[] = models.map((model) => {
    for (const alias of model.aliases) aliases[alias] = model.name;
    const { entry } = model;
    const firstProfile = model.profiles[0];
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
      replicas: byModel.get(model.name) ?? [],
      comfy: firstProfile?.comfy ? { workflow: firstProfile.comfy.workflow, inputs: { ...firstProfile.comfy.inputs }, outputs: firstProfile.comfy.outputs } : null,
      ...(canaryWeights.has(model.name) ? { canary_weight: canaryWeights.get(model.name) } : {}),
    };
  });
  return { models: routed, aliases };
}

/** Where the model's tokenizer files may be: the source itself when it is a folder or file the gateway can read. */
function tokenizerLocation(source: string): string | null {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(source)) return source.startsWith("file://") ? new URL(source).pathname : source;
  return source;
}
