import type { RoutingReplica, RoutingTable } from "../../protocol/routing-table.js";
import { cacheRoutingFromWire } from "../../catalog/cache-routing.js";
import { prefixText, type GatewayBody } from "../request/prompt-text.js";
import type { CacheKnowledge } from "./choose-replica.js";
import { EngineCacheUse } from "./engine-cache-use.js";
import { hashText } from "./hash-text.js";
import { PrefixIndex, prefixChain, prefixChunkChars, prefixChunksMax } from "./prefix-index.js";
import { defaultCacheRoutingWeights, type CacheRoutingWeights } from "./score-replicas.js";

const tieBreakChars = 4 * prefixChunkChars;

export interface CacheLookup {
  readonly chain: readonly number[];
  readonly prefixHash: number;
  readonly knowledge: CacheKnowledge;
}

/**
 * The gateway's side of `routing: cache`: the prompt's chain and what the
 * index knows of it before the choice, and the choice noted after it. The
 * prompt is read as the prefix routing reads it (each chat message's role and
 * text in order, or the completion prompt's text), as far as the chain's bound.
 *
 * Each engine's KV cache use comes from its own metrics, read by this gateway
 * (EngineCacheUse): a replica whose cache is nearly full loses a prefix it
 * holds, since the engine would evict it to make room anyway.
 */
export class CachePlacement {
  readonly #index = new PrefixIndex();
  /** The weights in force: the routing table's, once it carries them; until then (an older server) the configured ones. */
  #weights: CacheRoutingWeights;
  readonly #configured: CacheRoutingWeights;
  readonly #cacheUse: EngineCacheUse;
  readonly #useOf: (replica: RoutingReplica) => number | undefined;

  constructor(weights: CacheRoutingWeights = defaultCacheRoutingWeights, cacheUse: EngineCacheUse = new EngineCacheUse()) {
    this.#weights = weights;
    this.#configured = weights;
    this.#cacheUse = cacheUse;
    this.#useOf = (replica) => cacheUse.use(replica);
  }

  lookup(model: string, body: GatewayBody): CacheLookup {
    const text = prefixText(body, prefixChunkChars * prefixChunksMax);
    const chain = prefixChain(text);
    // The tie-break hashes the first 256 characters, so gateways agree on where a new system prompt goes,
    // and system prompts that open alike ("You are a helpful assistant") still spread.
    const prefixHash = hashText(text.slice(0, tieBreakChars));
    return { chain, prefixHash, knowledge: { held: this.#index.held(model, chain), chunks: chain.length, cacheUse: this.#useOf, weights: this.#weights } };
  }

  sent(model: string, lookup: CacheLookup, replica: RoutingReplica): void {
    this.#index.record(model, lookup.chain, replica.id);
  }

  get weights(): CacheRoutingWeights {
    return this.#weights;
  }

  /** Takes the table's weights, watches its replicas' cache use, and forgets replicas and models that left it. */
  follow(table: Pick<RoutingTable, "models" | "cache_routing">): void {
    const { models } = table;
    this.#weights = table.cache_routing === undefined ? this.#configured : cacheRoutingFromWire(table.cache_routing);
    this.#cacheUse.retain(models);
    this.#index.retain(new Map(models.map((model) => [model.name, new Set(model.replicas.map((replica) => replica.id))])));
  }

  close(): void {
    this.#cacheUse.close();
  }
}
