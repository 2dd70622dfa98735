import type { RoutingReplica } from "../../protocol/index.js";
import type { CacheRoutingWeights } from "../../catalog/index.js";

export { defaultCacheRoutingWeights, type CacheRoutingWeights } from "../../catalog/index.js";

export interface ScoreInput {
  /** Ready candidates, already filtered (ejection, canary arm). */
  readonly replicas: readonly RoutingReplica[];
  /** Chunks of the prompt's chain per replica id that it is known to hold. */
  readonly held: ReadonlyMap<string, number>;
  /** Chunks in the prompt's chain. */
  readonly chunks: number;
  /** Requests this gateway has in flight per replica id. */
  readonly inFlight: ReadonlyMap<string, number>;
  /** The engine's KV cache use (0 to 1) per replica id, where known; unknown counts as empty. */
  readonly cacheUse?: ((replica: RoutingReplica) => number | undefined) | undefined;
  /** The replica's rendezvous weight for this prompt: the tie-break, so gateways agree on a new prefix. */
  readonly tieBreak: (replica: RoutingReplica) => number;
  readonly weights: CacheRoutingWeights;
}

/** A replica's score (higher wins), apart for tests. */
export function scoreReplica(input: ScoreInput, replica: RoutingReplica, leastInFlight: number): number {
  const { weights } = input;
  const use = input.cacheUse?.(replica) ?? 0;
  const share = input.chunks === 0 ? 0 : Math.min(1, (input.held.get(replica.id) ?? 0) / input.chunks);
  const prefix = use >= weights.cacheFull ? 0 : weights.prefix * share;
  const queue = weights.queue * ((input.inFlight.get(replica.id) ?? 0) - leastInFlight);
  return prefix - queue - weights.cache * use;
}

/**
 * Picks the replica that answers the prompt soonest by what this gateway
 * knows (pure): the share of the prompt it holds, less its queue beyond the
 * least busy candidate's and its cache use. Equal scores (a prompt nobody
 * holds, on equally busy replicas) go to the highest rendezvous weight, so
 * every gateway sends a new prefix to the same replica.
 */
export function scoreReplicas(input: ScoreInput): RoutingReplica | undefined {
  if (input.replicas.length === 0) return undefined;
  const least = Math.min(...input.replicas.map((replica) => input.inFlight.get(replica.id) ?? 0));
  let best: RoutingReplica | undefined;
  let bestScore = Number.NEGATIVE_INFINITY;
  let bestTie = -1;
  for (const replica of input.replicas) {
    const score = scoreReplica(input, replica, least);
    // Scores within a thousandth are equal: floating-point shares must not break the rendezvous tie.
    const tie = input.tieBreak(replica);
    if (score > bestScore + 1e-3 || (Math.abs(score - bestScore) <= 1e-3 && tie > bestTie)) {
      best = replica;
      bestScore = Math.max(score, bestScore);
      bestTie = tie;
    }
  }
  return best;
}
