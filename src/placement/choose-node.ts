import type { CapacityIndex } from "./capacity-index.js";
import type { HostMemoryIndex } from "./host-memory-index.js";
import { cardHoldsReplica, classMatches, type FilterContext } from "./node-filters.js";
import { nodeScore, packScore, scoreCeiling, type ScoreWeights } from "./node-scores.js";
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
  readonly pack: number;
}

function scored(node: WorkingNode, group: CardGroup | undefined, model: string, context: FilterContext, weights: ScoreWeights): Scored {
  const input = { node, group, freeCards: group ? group.free.length : 0, profile: context.profile, model };
  return { node, group, cards: group ? group.free.slice(0, context.profile.gpus) : [], score: nodeScore(input, weights), pack: packScore(input) };
}

/** Higher score; on a tie the better fit, then the first node by name. */
function better(candidate: Scored, best: Scored | undefined): boolean {
  if (best === undefined || candidate.score !== best.score) return best === undefined || candidate.score > best.score;
  return candidate.pack > best.pack || (candidate.pack === best.pack && candidate.node.position < best.node.position);
}

/**
 * The best node for one replica, or undefined when none passes the filters.
 *
 * Nodes are taken in tiers by how many replicas of the model they hold (none
 * first): within a tier every node scores the same on spread, so the best is
 * the best fit on pack, which the capacity index (or, for a CPU profile, the
 * host-memory index) finds without looking at every node. A tier whose
 * highest possible score is below the best found so far ends the search.
 * The answer is the one scoring every node would give; the work per replica
 * stays small on a large fleet.
 */
export function chooseNode(working: WorkingSnapshot, indexes: PlacementIndexes, model: string, context: FilterContext, weights: ScoreWeights): NodeChoice | undefined {
  const profile = context.profile;
  let best: Scored | undefined;
  for (const replicasThere of [0, ...working.replicaCountsOf(model)]) {
    if (best && scoreCeiling(replicasThere, weights) < best.score) break;
    // The filters the indexes do not apply themselves (only schedulable nodes are indexed).
    const accept = (node: WorkingNode): boolean =>
      (node.modelReplicas.get(model) ?? 0) === replicasThere &&
      node.engines.has(profile.engine) &&
      (profile.memoryBytes <= 0 || node.freeMemoryBytes >= profile.memoryBytes) &&
      (profile.cpuCores <= 0 || node.freeCpuCores >= profile.cpuCores);
    let candidate: Scored | undefined;
    if (profile.gpus <= 0) {
      const node = indexes.hostMemory().bestFit(profile.memoryBytes, accept);
      if (node) candidate = scored(node, undefined, model, context, weights);
    } else {
      const group = indexes.cards.bestFit(profile.gpus, (cardClass, cardMemoryBytes) => classMatches(cardClass, profile) && cardHoldsReplica(cardMemoryBytes, context), accept);
      if (group) candidate = scored(group.node, group, model, context, weights);
    }
    if (candidate && better(candidate, best)) best = candidate;
  }
  return best;
}
