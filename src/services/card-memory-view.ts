import type { CatalogModel } from "../catalog/index.js";
import { holdsCards } from "../fleet/index.js";
import type { CardBytes } from "../placement/index.js";
import type { CardMemoryAnswer, PlannedMemoryView, NodeView, ReplicaView } from "../protocol/index.js";
import type { CatalogService } from "./catalog-service.js";

export interface CardMemoryParts {
  readonly catalog: Pick<CatalogService, "list">;
  readonly fleet: { listNodes(): Promise<NodeView[]>; listReplicas(): Promise<ReplicaView[]> };
  /** The planner's figures for one card of a replica of this profile; undefined until the model's files are read. */
  readonly cardBytes: (model: CatalogModel, profile: string) => CardBytes | undefined;
}

/**
 * Each card's memory three ways, for the console's bars: the planner's
 * share of every replica holding it (weights, KV cache at the model's
 * context, engine overhead), what the card reports as used, and what
 * processes llmgw did not start hold. Reads only; a replica of a model no
 * longer in the catalog, or not yet priced, holds its card without a share.
 */
export async function cardMemoryView(parts: CardMemoryParts): Promise<CardMemoryAnswer> {
  const [models, nodes, replicas] = await Promise.all([parts.catalog.list(), parts.fleet.listNodes(), parts.fleet.listReplicas()]);
  const modelOf = new Map(models.map((model) => [model.name, model]));
  const priced = new Map<string, CardBytes | undefined>();
  const sharesByCard = new Map<string, PlannedMemoryView[]>();
  for (const replica of replicas) {
    if (!holdsCards(replica.state) || replica.gpus.length === 0) continue;
    const model = modelOf.get(replica.model);
    if (!model) continue;
    const key = `${replica.model}\u0000${replica.profile}`;
    if (!priced.has(key)) priced.set(key, parts.cardBytes(model, replica.profile));
    const bytes = priced.get(key);
    if (!bytes) continue;
    for (const card of replica.gpus) {
      const cardKey = `${replica.node}\u0000${card}`;
      const shares = sharesByCard.get(cardKey) ?? [];
      shares.push({ replica: replica.id, model: replica.model, weights_bytes: bytes.weights, kv_bytes: bytes.kvCache, overhead_bytes: bytes.overhead });
      sharesByCard.set(cardKey, shares);
    }
  }
  return {
    nodes: nodes.map((node) => ({
      node: node.name,
      cards: node.gpus.map((gpu) => ({
        index: gpu.index,
        total_bytes: gpu.memory_bytes,
        used_bytes: gpu.memory_used_bytes,
        foreign_bytes: gpu.memory_foreign_bytes,
        planned: sharesByCard.get(`${node.name}\u0000${gpu.index}`) ?? [],
      })),
    })),
  };
}
