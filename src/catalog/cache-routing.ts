/** The weights of `routing: cache` (server.yaml `gateway.cache_routing`), read by the gateway's scorer. */
export interface CacheRoutingWeights {
  /** Worth of holding the whole prompt: a replica holding a share of it gets that share of this. */
  readonly prefix: number;
  /** Cost of each request in flight beyond the least busy candidate's. */
  readonly queue: number;
  /** Cost of the engine's KV cache in use, per whole cache (0 to 1 of it). */
  readonly cache: number;
  /** Cache use (0 to 1) from which a replica's prefix counts for nothing: its engine is evicting. */
  readonly cacheFull: number;
}

/**
 * Defaults. llm-d's scheduler weighs prefix 3, queue 2 and KV use 2 over
 * scores normalised to 0..1; here the queue is counted in requests, so its
 * weight is per request: with prefix 3 and queue 1, a replica holding the
 * whole prompt keeps it while it has at most 2 more requests in flight than
 * the least busy one, ties at 3 more and loses it past that (a 2-core or
 * one-GPU engine serves a few requests at once; past that, reading the prompt
 * again elsewhere is quicker than waiting). KV use 2 as llm-d, and a replica
 * at 95 % of its cache gets no credit for a prefix it is about to evict.
 */
export const defaultCacheRoutingWeights: CacheRoutingWeights = Object.freeze({ prefix: 3, queue: 1, cache: 2, cacheFull: 0.95 });

/** The weights as the routing table carries them (server.yaml's own key names). */
export interface CacheRoutingOnWire {
  readonly prefix_weight: number;
  readonly queue_weight: number;
  readonly cache_weight: number;
  readonly cache_full: number;
}

export function cacheRoutingOnWire(weights: CacheRoutingWeights): CacheRoutingOnWire {
  return { prefix_weight: weights.prefix, queue_weight: weights.queue, cache_weight: weights.cache, cache_full: weights.cacheFull };
}

export function cacheRoutingFromWire(wire: CacheRoutingOnWire): CacheRoutingWeights {
  return Object.freeze({ prefix: wire.prefix_weight, queue: wire.queue_weight, cache: wire.cache_weight, cacheFull: wire.cache_full });
}
