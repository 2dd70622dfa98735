import type { CapacityIndex } from "./capacity-index.js";
import type { HostMemoryIndex } from "./host-memory-index.js";
import { bestFitGroup, cardHoldsReplica, classMatches, nodeReason, type FilterContext } from "./node-filters.js";
import { nodeScore, type ScoreWeights } from "./node-scores.js";
import type { CardGroup, WorkingNode, WorkingSnapshot } from "./working-snapshot.js";

/** The indexes over the working copy; the host-memory one is built at the first CPU replica. */
export interface PlacementIndexes {
  readonly cards: CapacityIndex;
  hostMemory(): HostMemoryIndex;
}

export interface NodeChoice {
  readonly node: WorkingNode;
  readonly group: CardGroup | undefined;
  readonly cards: readonly number[];
}

interface Scored extends NodeChoice {
  readonly score: number;
}

function scored(node: WorkingNode, group: CardGroup | undefined, model: string, context: FilterContext, weights: ScoreWeights): Scored {
  const freeCards = group ? group.free.length : 0;
  const score = nodeScore({ node, group, freeCards, profile: context.profile, model }, weights);
  return { node, group, cards: group ? group.free.slice(0, context.profile.gpus) : [], score };
}

function better(candidate: Scored, best: Scored | undefined): boolean {
  return best === undefined || candidate.score > best.score || (candidate.score === best.score && candidate.node.position < best.node.position);
}

/**
 * The best node for one replica, or undefined when none passes the filters.
 *
 * For a GPU profile it scores the nodes that already hold the model (each in
 * full) and, from the capacity index, the best-fit node among the rest: every
 * other node scores the same on spread and no better on pack, so it could
 * not win. CPU profiles do the same with the host-memory index. That keeps
 * the work per replica small on a large fleet while the answer stays the one
 * a scan of every node would give.
 */
export function chooseNode(working: WorkingSnapshot, indexes: PlacementIndexes, model: string, context: FilterContext, weights: ScoreWeights): NodeChoice | undefined {
  const profile = context.profile;
  let best: Scored | undefined;
  const holders = working.nodesHolding(model);
  for (const node of holders) {
    if (nodeReason(node, context)) continue;
    const candidate = scored(node, bestFitGroup(node, context), model, context, weights);
    if (better(candidate, best)) best = candidate;
  }
  // The filters the indexes do not apply themselves (schedulable nodes only are indexed).
  const accept = (node: WorkingNode): boolean =>
    !holders.has(node) &&
    node.engines.has(profile.engine) &&
    (profile.memoryBytes <= 0 || node.freeMemoryBytes >= profile.memoryBytes) &&
    (profile.cpuCores <= 0 || node.freeCpuCores >= profile.cpuCores);
  if (profile.gpus <= 0) {
    const node = indexes.hostMemory().bestFit(profile.memoryBytes, accept);
    if (node) {
      const candidate = scored(node, undefined, model, context, weights);
      if (better(candidate, best)) best = candidate;
    }
    return best;
  }
  const group = indexes.cards.bestFit(profile.gpus, (gpuClass, cardMemoryBytes) => classMatches(gpuClass, profile) && cardHoldsReplica(cardMemoryBytes, context), accept);
  if (group) {
    const candidate = scored(group.node, group, model, context, weights);
    if (better(candidate, best)) best = candidate;
  }
  return best;
}
