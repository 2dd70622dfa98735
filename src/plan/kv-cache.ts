import type { Architecture } from "./architecture.js";

/**
 * KV cache arithmetic. Engines (vLLM's "auto" KV dtype, llama.cpp's default
 * f16 cache) store keys and values at 16 bits unless told otherwise, so two
 * bytes per element is the default everywhere.
 */
export const defaultKvBytesPerElement = 2;

/**
 * Bytes one layer stores per token.
 *
 * - Grouped-query (and multi-head) attention: a key and a value vector per KV
 *   head: 2 × KV heads × head_dim × bytes. KV heads, never attention heads —
 *   on Llama-3.3-70B (64 attention heads, 8 KV heads) the other choice is an
 *   8× overestimate that refuses models that fit.
 * - MLA (DeepSeek-V2/V3): one compressed latent (kv_lora_rank) plus the
 *   shared rope key (qk_rope_head_dim) per layer, no factor 2 and no heads:
 *   vLLM and SGLang cache exactly this.
 * - MoE: experts change the feed-forward, not attention, so the same formula.
 */
export function kvBytesPerTokenPerLayer(architecture: Architecture, bytesPerElement = defaultKvBytesPerElement): number {
  if (architecture.mla) return (architecture.mla.kvLoraRank + architecture.mla.qkRopeHeadDim) * bytesPerElement;
  return 2 * architecture.kvHeads * architecture.headDim * bytesPerElement;
}

/**
 * KV cache bytes per token of context, all layers: the number reported as
 * kv_bytes_per_token. For sliding-window models this is the cost of a token
 * while the context is within the window; beyond it, kvCacheBytes caps the
 * sliding layers.
 */
export function kvBytesPerToken(architecture: Architecture, bytesPerElement = defaultKvBytesPerElement): number {
  return architecture.layers * kvBytesPerTokenPerLayer(architecture, bytesPerElement);
}

/**
 * KV cache bytes for one sequence of `context` tokens. Sliding-window layers
 * keep at most `window` tokens (vLLM's hybrid KV cache manager allocates them
 * that way; gemma-2's 21 local layers stop growing at 4096), so a long
 * context costs less than context × kvBytesPerToken.
 */
export function kvCacheBytes(architecture: Architecture, context: number, bytesPerElement = defaultKvBytesPerElement): number {
  const perLayer = kvBytesPerTokenPerLayer(architecture, bytesPerElement);
  const sliding = architecture.slidingWindow;
  if (!sliding) return architecture.layers * perLayer * context;
  const fullLayers = architecture.layers - sliding.slidingLayers;
  return perLayer * (fullLayers * context + sliding.slidingLayers * Math.min(context, sliding.window));
}

/** How a replica's cards share the KV cache. */
export type KvLayout =
  /** vLLM/SGLang tensor parallel: split by KV head; replicated once cards outnumber KV heads. */
  | "tensor_parallel"
  /** llama.cpp --split-mode layer: each card holds the cache of its own layers. */
  | "layer_split";

/**
 * How many copies of the KV cache a tensor-parallel replica keeps in total.
 * Each rank holds max(1, KV heads / cards) heads, so with more cards than KV
 * heads every head is stored cards / KV heads times. MLA's latent has no heads
 * and every rank keeps all of it.
 */
export function kvReplication(architecture: Architecture, cards: number): number {
  if (architecture.mla) return cards;
  return Math.max(1, cards / architecture.kvHeads);
}

/**
 * KV cache bytes the busiest card of a replica holds for one sequence of
 * `context` tokens. `pipelineLayers` is the layer count of the largest
 * pipeline stage when the replica is split into stages across nodes (each
 * stage caches only its own layers, split over its `cards` tensor ranks).
 */
export function kvCacheBytesPerCard(
  architecture: Architecture,
  context: number,
  cards: number,
  layout: KvLayout,
  bytesPerElement = defaultKvBytesPerElement,
  pipelineLayers = architecture.layers,
): number {
  const total = kvCacheBytes(architecture, context, bytesPerElement);
  if (layout === "layer_split") {
    const layersOnBusiestCard = Math.ceil(architecture.layers / cards);
    return (total * layersOnBusiestCard) / architecture.layers;
  }
  return (total * (pipelineLayers / architecture.layers) * kvReplication(architecture, cards)) / cards;
}
