import type { RoutingModel, RoutingReplica } from "../../protocol/routing-table.js";
import { prefixText, type GatewayBody } from "../request/prompt-text.js";
import type { CacheKnowledge } from "./choose-replica.js";
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
 * Engine cache use is not known here yet: the routing table carries no replica
 * metrics and the gateway scrapes none, so that term of the score is zero for
 * every replica (the queue term still moves requests off a busy holder).
 */
export class CachePlacement {
  readonly #index = new PrefixIndex();
  readonly #weights: CacheRoutingWeights;

  constructor(weights: CacheRoutingWeights = defaultCacheRoutingWeights) {
    this.#weights = weights;
  }

  lookup(model: string, body: GatewayBody): CacheLookup {
    const text = prefixText(body, prefixChunkChars * prefixChunksMax);
    const chain = prefixChain(text);
    // The tie-break hashes the first 256 characters, so gateways agree on where a new system prompt goes,
    // and system prompts that open alike ("You are a helpful assistant") still spread.
    const prefixHash = hashText(text.slice(0, tieBreakChars));
    return { chain, prefixHash, knowledge: { held: this.#index.held(model, chain), chunks: chain.length, weights: this.#weights } };
  }

  sent(model: string, lookup: CacheLookup, replica: RoutingReplica): void {
    this.#index.record(model, lookup.chain, replica.id);
  }

  /** Forgets replicas and models that left the routing table. */
  retain(models: readonly RoutingModel[]): void {
    this.#index.retain(new Map(models.map((model) => [model.name, new Set(model.replicas.map((replica) => replica.id))])));
  }
}
