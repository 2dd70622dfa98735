import type { RoutingReplica } from "../../protocol/index.js";
import { hashText } from "./hash-text.js";
import { sameArmFirst, type Arm } from "./choose-arm.js";
import { scoreReplicas, type CacheRoutingWeights } from "./score-replicas.js";

/** What a model routed by cache brings to the choice: where its prompt's prefix is known to be (PrefixIndex). */
export interface CacheKnowledge {
  /** Chunks of the prompt's chain per replica id that it is known to hold. */
  readonly held: ReadonlyMap<string, number>;
  readonly chunks: number;
  /** The engine's KV cache use (0 to 1) per replica, where known. */
  readonly cacheUse?: ((replica: RoutingReplica) => number | undefined) | undefined;
  readonly weights: CacheRoutingWeights;
}

export interface ReplicaChoice {
  /** Ready replicas not yet tried for this request. */
  readonly candidates: readonly RoutingReplica[];
  /** Requests this gateway has in flight per replica id. */
  readonly inFlight: ReadonlyMap<string, number>;
  /** A hash of the prompt's leading text, for models routed by prefix; undefined otherwise. */
  readonly prefixHash: number | undefined;
  /** 0 ≤ x < 1; Math.random in production, fixed in tests. */
  readonly random: () => number;
  /** True for a replica whose endpoint is ejected for now (EjectedEndpoints): it is passed over while any other is left. */
  readonly ejected?: ((replica: RoutingReplica) => boolean) | undefined;
  /** The canary arm chosen for the request: that arm's replicas, when it has any left (sameArmFirst). */
  readonly arm?: Arm | undefined;
  /** Set for a model routed by cache: the scorer decides, `prefixHash` breaking its ties. */
  readonly cache?: CacheKnowledge | undefined;
}

/**
 * How many more requests than the least busy candidate the prefix's own
 * replica may hold before the request goes elsewhere: enough that the prefix
 * cache pays off, few enough that one popular system prompt cannot pile every
 * request onto one replica while the others idle.
 */
export const prefixOverloadMargin = 4;

/**
 * Picks a replica (pure). Fewest requests in flight by the power of two random
 * choices: two candidates drawn at random, the less busy one wins. That keeps
 * load even without every gateway herding onto the one replica that looked
 * least busy a moment ago, which is what "always the least busy" does with
 * several gateways. Draining replicas are never candidates.
 *
 * Ejected replicas are left out while any other is ready; when every one is
 * ejected the choice is made among them as if none were (Envoy's panic
 * threshold), so an ejection can make a model slower to answer, never
 * unreachable. That comes before the canary arm: a canary whose only replica
 * was killed sends its share to the stable arm, rather than each of its
 * requests paying the refused connect first.
 *
 * With a prefix hash, the prompt's own replica comes first (rendezvous
 * hashing: the same prefix picks the same replica, and a replica coming or
 * going moves only its own share of prefixes) while it holds at most
 * `prefixOverloadMargin` more requests than the least busy candidate.
 *
 * With cache knowledge (routing by cache), the scorer picks among the ready
 * candidates (scoreReplicas), the prefix hash's rendezvous weight breaking ties.
 */
export function chooseReplica(choice: ReplicaChoice): RoutingReplica | undefined {
  let ready: readonly RoutingReplica[] = choice.candidates.filter((replica) => replica.state === "ready");
  if (ready.length === 0) return undefined;
  const ejected = choice.ejected;
  if (ejected !== undefined && ready.some(ejected)) {
    const kept = ready.filter((replica) => !ejected(replica));
    if (kept.length > 0) ready = kept;
  }
  if (choice.arm !== undefined) ready = sameArmFirst(ready, choice.arm);
  const load = (replica: RoutingReplica) => choice.inFlight.get(replica.id) ?? 0;
  if (choice.cache !== undefined) {
    const seed = choice.prefixHash ?? 0;
    return scoreReplicas({ ...choice.cache, replicas: ready, inFlight: choice.inFlight, tieBreak: (replica) => mix(seed ^ hashText(replica.id)) });
  }
  if (choice.prefixHash !== undefined) {
    let owner = ready[0] as RoutingReplica;
    let best = -1;
    for (const replica of ready) {
      const weight = mix(choice.prefixHash ^ hashText(replica.id));
      if (weight > best) {
        best = weight;
        owner = replica;
      }
    }
    const least = Math.min(...ready.map(load));
    if (load(owner) <= least + prefixOverloadMargin) return owner;
  }
  if (ready.length === 1) return ready[0];
  const first = Math.floor(choice.random() * ready.length);
  let second = Math.floor(choice.random() * (ready.length - 1));
  if (second >= first) second += 1;
  const a = ready[first] as RoutingReplica;
  const b = ready[second] as RoutingReplica;
  return load(b) < load(a) ? b : a;
}

/** A 32-bit finaliser (murmur3's), so replica weights for one prefix are not correlated. */
function mix(value: number): number {
  let hash = value >>> 0;
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return hash >>> 0;
}
