import type { Template } from "@huggingface/jinja";
import type { FastifyRequest } from "fastify";
import type { LlamaEmbeddingContext, LlamaModel } from "node-llama-cpp";
import type { ConcurrencyGate } from "../openai-server/concurrency-gate.js";
import type { LlamaMetrics } from "./llama-metrics.js";
import type { LoadedLlama } from "./llama-runtime.js";
import type { LlamaServerArguments } from "./llama-server-arguments.js";
import { RequestFailed } from "./request-failed.js";
import { SlotPool, type Slot } from "./slot-pool.js";

/** The model as loaded, with a context per choice of adapter scales. */
export interface Loaded {
  readonly runtime: LoadedLlama;
  readonly model: LlamaModel;
  readonly template: Template | undefined;
  /** Whether the chat template renders `tools` and `tool_calls` itself; if not, the engine writes them in Hermes' format. */
  readonly templateTakesTools: boolean;
  readonly slotContext: number;
  readonly embeddings: LlamaEmbeddingContext | undefined;
  /** Keyed by the adapter scales, comma-separated ("" for the base model). */
  readonly contexts: Map<string, Promise<SlotPool>>;
}

export interface RouteContext {
  readonly args: LlamaServerArguments;
  readonly modelName: string;
  readonly metrics: LlamaMetrics;
  readonly gate: ConcurrencyGate;
  readonly state: () => Loaded | undefined;
  readonly loadError: () => string | undefined;
  readonly log: (line: string) => void;
}

/** One llama.cpp context for one choice of adapter scales, with a sequence per slot. */
export function slotPoolFor(state: Loaded, args: LlamaServerArguments, scales: readonly number[]): Promise<SlotPool> {
  const key = scales.join(",");
  let found = state.contexts.get(key);
  if (found === undefined) {
    const adapters = args.adapters.flatMap((adapter, index) => ((scales[index] ?? 0) !== 0 ? [{ filePath: adapter.path, scale: scales[index] ?? 0 }] : []));
    found = state.model
      .createContext({
        contextSize: state.slotContext,
        sequences: args.parallel,
        ...(args.threads !== undefined ? { threads: args.threads } : {}),
        ...(adapters.length > 0 ? { lora: { adapters } } : {}),
      })
      .then((context) => new SlotPool(context, args.parallel));
    state.contexts.set(key, found);
    found.catch(() => state.contexts.delete(key));
  }
  return found;
}

/** The KV cache's use over every context made so far, as llama-server's kv_cache_usage_ratio. */
export async function kvCacheUsage(state: Loaded | undefined): Promise<{ used: number; ratio: number }> {
  if (state === undefined) return { used: 0, ratio: 0 };
  const pools = await Promise.all([...state.contexts.values()].map((pool) => pool.catch(() => undefined)));
  let used = 0;
  let capacity = 0;
  for (const pool of pools) {
    if (pool === undefined) continue;
    used += pool.usage.used;
    capacity += pool.usage.capacity;
  }
  return { used, ratio: capacity > 0 ? used / capacity : 0 };
}

/**
 * Waits for a turn at the gate (503 past the queue's bound), runs `work`,
 * frees the turn. `signal` aborts when the client goes away.
 */
export async function withTurn<T>(route: RouteContext, request: FastifyRequest, work: (state: Loaded, signal: AbortSignal) => Promise<T>): Promise<T> {
  const { gate, args } = route;
  const state = route.state();
  if (state === undefined) throw new RequestFailed(503, "unavailable_error", "Loading model");
  if (gate.running >= gate.limit && gate.waiting >= args.queueLimit) {
    throw new RequestFailed(503, "unavailable_error", `all ${gate.limit} slots are busy and ${gate.waiting} requests wait; try again shortly`);
  }
  const abort = new AbortController();
  const onClose = () => {
    if (!request.raw.complete || !request.raw.socket.writable) abort.abort();
  };
  request.raw.socket.once("close", onClose);
  const release = await gate.acquire(abort.signal).catch(() => {
    throw new RequestFailed(499, "cancelled", "client went away while waiting for a slot");
  });
  try {
    return await work(state, abort.signal);
  } finally {
    release();
    request.raw.socket.off("close", onClose);
  }
}

/** A turn at the gate and the slot (of the context for `scales`) whose cache suits the prompt best. */
export async function withSlot<T>(
  route: RouteContext,
  request: FastifyRequest,
  scales: readonly number[],
  prompt: readonly number[],
  cachePrompt: boolean,
  work: (state: Loaded, slot: Slot, signal: AbortSignal) => Promise<T>,
): Promise<T> {
  return withTurn(route, request, async (state, signal) => {
    const pool = await slotPoolFor(state, route.args, scales);
    const slot = pool.take(prompt, cachePrompt);
    if (slot === undefined) throw new RequestFailed(503, "unavailable_error", "no free slot in the context (more requests than slots)");
    try {
      return await work(state, slot, signal);
    } finally {
      pool.release(slot);
    }
  });
}
