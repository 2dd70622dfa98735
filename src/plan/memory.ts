/**
 * The per-card memory budget: what a card may use, what the engine takes
 * before any KV cache, and the largest context that fits in the rest.
 */
import type { Architecture } from "./architecture.js";
import { kvCacheBytesPerCard, type KvLayout } from "./kv-cache.js";

const GiB = 1024 ** 3;

/**
 * The share of each card an engine may use. vLLM's --gpu-memory-utilization
 * defaults to 0.90; the planner reserves the rest once, here, and nowhere
 * else (a second reserve hidden in an overhead constant is how estimators
 * end up refusing models that fit).
 */
export const defaultGpuMemoryUtilization = 0.9;

export function usableBytes(cardMemoryBytes: number, gpuMemoryUtilization = defaultGpuMemoryUtilization): number {
  return Math.floor(cardMemoryBytes * gpuMemoryUtilization);
}

/** sglang is planned only for replicas that span nodes; on one node vLLM stands for both. */
export type EngineKind = "vllm" | "sglang" | "llamacpp";

/**
 * Memory a rank needs besides weights and KV cache, charged per rank from
 * that rank's own share of the weights (not the whole model's: a 70B model
 * over 4 cards has a quarter-size activation footprint per card).
 *
 * vLLM, per rank:
 * - 1.0 GiB fixed: CUDA context, cuBLAS workspaces and other non-torch
 *   memory (vLLM's profile logs 0.2–0.6 GiB) plus CUDA graphs (vLLM logs
 *   0.3–0.9 GiB for its default capture sizes);
 * - 0.5 GiB when tensor parallel: NCCL and custom all-reduce buffers;
 * - 3% of the rank's weights: the activation peak of vLLM's profiling pass
 *   (8192 batched tokens), which grows with the layer width the rank holds.
 *   On Llama-3.1-8B (15.0 GiB weights) that is 0.45 GiB; vLLM reports
 *   0.4–1.2 GiB there depending on the sampler's batch.
 *
 * llama.cpp, per card or host: 0.5 GiB fixed (CUDA context and the compute
 * buffer llama.cpp logs at 0.3–0.6 GiB for 7–8B models with -ub 512) plus
 * 2% of the share (output logits and graph buffers scale with the layers held).
 *
 * Compare GPUStack's weights × 1.2 + 2 GiB: on Llama-3.3-70B over two cards
 * that charges 15 GiB per card beyond the weights, which refuses a fit.
 */
export function runtimeOverheadBytes(engine: EngineKind, weightsBytesPerRank: number, cards: number): number {
  if (engine === "llamacpp") return Math.round(0.5 * GiB + 0.02 * weightsBytesPerRank);
  return Math.round(1.0 * GiB + (cards > 1 ? 0.5 * GiB : 0) + 0.03 * weightsBytesPerRank);
}

/**
 * Without a requested context, a candidate counts as fitting when it holds
 * at least this many tokens (or the whole trained context if shorter): a
 * model that loads with room for a few hundred tokens is not a usable fit.
 */
export const minimumUsefulContext = 4096;

export interface ContextBudget {
  readonly architecture: Architecture;
  readonly usableBytes: number;
  readonly weightsBytesPerCard: number;
  readonly overheadBytesPerCard: number;
  /** Tensor-parallel ranks each layer is split over. */
  readonly cards: number;
  readonly kvLayout: KvLayout;
  /** Layers of the largest pipeline stage, for a replica split into stages across nodes; all layers otherwise. */
  readonly pipelineLayers?: number;
}

function kvPerCard(budget: ContextBudget, context: number): number {
  return kvCacheBytesPerCard(budget.architecture, context, budget.cards, budget.kvLayout, undefined, budget.pipelineLayers);
}

/** Bytes left on the busiest card after weights and overhead (negative when they alone do not fit). */
export function bytesLeftForKv(budget: ContextBudget): number {
  return budget.usableBytes - budget.weightsBytesPerCard - budget.overheadBytesPerCard;
}

/**
 * The longest single sequence whose KV cache fits in what is left, capped at
 * the trained context. Found by bisection on kvCacheBytesPerCard, which is
 * non-decreasing in context (sliding windows make it piecewise linear), so
 * every rule the KV arithmetic knows applies here too.
 */
export function maxContext(budget: ContextBudget): number {
  const left = bytesLeftForKv(budget);
  if (left <= 0) return 0;
  const needs = (context: number): number => kvPerCard(budget, context);
  const trained = budget.architecture.trainedContext;
  if (needs(trained) <= left) return trained;
  let low = 0;
  let high = trained;
  while (high - low > 1) {
    const middle = Math.floor((low + high) / 2);
    if (needs(middle) <= left) low = middle;
    else high = middle;
  }
  return low;
}

/** Total bytes the busiest card needs for a sequence of `context` tokens. */
export function bytesNeededPerCard(budget: ContextBudget, context: number): number {
  return budget.weightsBytesPerCard + budget.overheadBytesPerCard + kvPerCard(budget, context);
}
