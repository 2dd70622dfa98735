import type { Fleet, Pool } from "../fleet/pools.js";
import { largestFreeOnOneNode, largestNode, poolCardsFree, poolCardsTotal } from "../fleet/pools.js";
import { formatContext, formatGiB } from "./format.js";
import { kvCacheBytesPerCard, kvBytesPerToken, type KvLayout } from "./kv-cache.js";
import {
  bytesLeftForKv,
  defaultGpuMemoryUtilization,
  maxContext,
  minimumUsefulContext,
  runtimeOverheadBytes,
  usableBytes,
  type ContextBudget,
  type EngineKind,
} from "./memory.js";
import type { ModelFacts } from "./model-facts.js";
import { splitsHeadsReason } from "./splits-heads.js";
import { ggufQuantizationsPlanned, type Quantization } from "./weights.js";
import { sixteenBitQuantization, totalWeightsBytes, weightsPerCard } from "./weights-per-card.js";

/** The stable JSON shape of `ctl model plan --json` and GET /api/v1/plan (docs/PLAN.md). */
export interface Plan {
  readonly source: string;
  readonly architecture: PlanArchitecture;
  readonly gpu_memory_utilization: number;
  /** The --context asked for; absent when none was. */
  readonly requested_context?: number;
  readonly candidates: readonly PlanCandidate[];
}

export interface PlanArchitecture {
  readonly model_type: string;
  readonly layers: number;
  readonly attention_heads: number;
  readonly kv_heads: number;
  readonly head_dim: number;
  readonly hidden_size: number;
  readonly vocab_size: number;
  readonly trained_context: number;
  readonly parameters: number;
  /** KV cache bytes per token for the whole model at 16-bit (sliding layers uncapped). */
  readonly kv_bytes_per_token: number;
  readonly checkpoint_dtype: string;
  readonly checkpoint_bytes: number;
  readonly experts?: number;
  readonly experts_per_token?: number;
  readonly sliding_window?: { readonly window: number; readonly sliding_layers: number };
  readonly mla?: { readonly kv_lora_rank: number; readonly qk_rope_head_dim: number };
}

export interface PlanPool {
  /** GPU class, or "cpu" for host memory. */
  readonly gpu_class: string;
  readonly fabric: string;
  /** For a CPU pool: the number of hosts with this much memory. */
  readonly cards_free: number;
  readonly cards_total: number;
  /** For a CPU pool: the host's memory. */
  readonly card_memory_bytes: number;
}

export interface PlanCandidate {
  readonly pool: PlanPool;
  readonly engine: EngineKind;
  readonly quantization: string;
  /** Cards per replica; 0 for a CPU candidate. */
  readonly gpus: number;
  readonly weights_bytes_per_card: number;
  /** KV cache bytes per token on the busiest card (heads split, replication included). */
  readonly kv_bytes_per_token: number;
  readonly overhead_bytes_per_card: number;
  readonly usable_bytes_per_card: number;
  /** Largest single-sequence context that fits, capped at the trained context; 0 when the weights alone do not fit. */
  readonly max_context: number;
  readonly fits: boolean;
  /** What is short and by how much, for every reason the candidate misses. */
  readonly short?: readonly string[];
  /**
   * Set when the candidate needs weights in another format than the source's:
   * a GGUF file for llama.cpp, or an int8/int4 (AWQ, GPTQ) checkpoint for
   * vLLM, which cannot quantise 16-bit weights to those as it loads (fp8 it can).
   */
  readonly requires?: string;
}

export interface PlanOptions {
  readonly context?: number;
  readonly gpuMemoryUtilization?: number;
}

/** Cards per replica the planner tries: powers of two, as tensor parallel engines expect. */
export const cardCounts = [1, 2, 4, 8] as const;

function quantizationsFor(facts: ModelFacts): { vllm: Quantization[]; llamacpp: Quantization[] } {
  if (facts.checkpoint.format === "gguf") {
    // The file's own type; a file without general.file_type is still planned, labelled "GGUF".
    return { vllm: [], llamacpp: [(facts.ggufFileType ?? "GGUF") as Quantization] };
  }
  if (facts.checkpoint.quantization) return { vllm: [facts.checkpoint.quantization], llamacpp: [] };
  return { vllm: [sixteenBitQuantization(facts), "fp8", "int8", "int4"], llamacpp: [...ggufQuantizationsPlanned] };
}

interface Slot {
  readonly pool: PlanPool;
  readonly cardMemoryBytes: number;
  readonly cards: number;
  readonly onCpu: boolean;
  /** Why this slot cannot be used now regardless of the model (not enough free cards). */
  readonly unavailable: string | undefined;
}

function gpuSlots(pool: Pool): Slot[] {
  const planPool: PlanPool = {
    gpu_class: pool.gpuClass,
    fabric: pool.fabric,
    cards_free: poolCardsFree(pool),
    cards_total: poolCardsTotal(pool),
    card_memory_bytes: pool.cardMemoryBytes,
  };
  const mostFree = largestFreeOnOneNode(pool);
  // A replica lives on one node: the largest node bounds the card count,
  // however many cards the pool has in total.
  return cardCounts
    .filter((cards) => cards <= largestNode(pool))
    .map((cards) => ({
      pool: planPool,
      cardMemoryBytes: pool.cardMemoryBytes,
      cards,
      onCpu: false,
      unavailable:
        cards > mostFree ? `no node in the pool has ${cards} free cards (most free on one node: ${mostFree})` : undefined,
    }));
}

function cpuSlots(fleet: Fleet): Slot[] {
  const byMemory = new Map<number, number>();
  for (const node of fleet.cpuNodes) byMemory.set(node.memoryBytes, (byMemory.get(node.memoryBytes) ?? 0) + 1);
  return [...byMemory.entries()]
    .sort((a, b) => b[0] - a[0])
    .map(([memoryBytes, hosts]) => ({
      pool: { gpu_class: "cpu", fabric: "host", cards_free: hosts, cards_total: hosts, card_memory_bytes: memoryBytes },
      cardMemoryBytes: memoryBytes,
      cards: 1,
      onCpu: true,
      unavailable: undefined,
    }));
}

function evaluate(
  facts: ModelFacts,
  slot: Slot,
  engine: EngineKind,
  quantization: Quantization,
  utilization: number,
  requested: number | undefined,
): PlanCandidate {
  const architecture = facts.architecture;
  const short: string[] = [];
  if (slot.unavailable) short.push(slot.unavailable);
  if (engine === "vllm") {
    const reason = splitsHeadsReason(slot.cards, architecture.attentionHeads, architecture.kvHeads);
    if (reason) short.push(`tensor parallel: ${reason}`);
  }
  const kvLayout: KvLayout = engine === "vllm" ? "tensor_parallel" : "layer_split";
  const weights = weightsPerCard(facts, quantization, engine, slot.cards, slot.onCpu);
  const overhead = runtimeOverheadBytes(engine, weights, slot.cards);
  const usable = usableBytes(slot.cardMemoryBytes, utilization);
  const budget: ContextBudget = {
    architecture,
    usableBytes: usable,
    weightsBytesPerCard: weights,
    overheadBytesPerCard: overhead,
    cards: slot.cards,
    kvLayout,
  };
  const largest = maxContext(budget);
  const target = requested ?? Math.min(minimumUsefulContext, architecture.trainedContext);
  const where = slot.onCpu ? "the host" : "each card";
  const usableText = `${formatGiB(usable)} usable (${utilization.toFixed(2)} of ${formatGiB(slot.cardMemoryBytes)})`;
  if (requested !== undefined && requested > architecture.trainedContext) {
    short.push(`the requested ${formatContext(requested)} context is longer than the ${formatContext(architecture.trainedContext)} the model was trained for`);
  }
  const left = bytesLeftForKv(budget);
  if (left <= 0) {
    short.push(`${where} needs ${formatGiB(weights)} for weights and ${formatGiB(overhead)} runtime overhead, has ${usableText}: ${formatGiB(-left)} short before any KV cache`);
  } else if (largest < target && target <= architecture.trainedContext) {
    const kvNeeded = kvCacheBytesPerCard(architecture, target, slot.cards, kvLayout);
    short.push(
      `at ${formatContext(target)} context ${where} needs ${formatGiB(kvNeeded)} of KV cache, ${formatGiB(left)} is left after weights and overhead: ${formatGiB(kvNeeded - left)} short (largest context ${formatContext(largest)})`,
    );
  }
  return {
    pool: slot.pool,
    engine,
    quantization,
    gpus: slot.onCpu ? 0 : slot.cards,
    weights_bytes_per_card: weights,
    kv_bytes_per_token: Math.round(kvCacheBytesPerCard(architecture, 1, slot.onCpu ? 1 : slot.cards, kvLayout)),
    overhead_bytes_per_card: overhead,
    usable_bytes_per_card: usable,
    max_context: largest,
    fits: short.length === 0,
    ...(short.length > 0 ? { short } : {}),
    ...requirement(facts, engine, quantization),
  };
}

/** What a candidate needs beyond the source as given, in words for the person choosing. */
function requirement(facts: ModelFacts, engine: EngineKind, quantization: Quantization): { requires?: string } {
  if (facts.checkpoint.format === "gguf" || facts.checkpoint.quantization) return {};
  if (engine === "llamacpp") return { requires: `a ${quantization} GGUF file of this model (the source is safetensors)` };
  if (quantization === "int8" || quantization === "int4") {
    return { requires: `an ${quantization} checkpoint of this model (${quantization === "int4" ? "AWQ or GPTQ" : "GPTQ or compressed-tensors"}): vLLM does not quantise 16-bit weights to ${quantization} as it loads` };
  }
  return {};
}

/** Effective bits per weight of a candidate's quantisation: the precision order of the list. */
function bitsPerWeight(facts: ModelFacts, quantization: Quantization): number {
  return (totalWeightsBytes(facts, quantization) * 8) / facts.parameters;
}

/**
 * Every pool × quantisation × cards-per-replica candidate, best first:
 * fitting before missing, GPU before CPU, fewer cards, higher precision,
 * vLLM before llama.cpp, longer context.
 */
export function planCandidates(facts: ModelFacts, fleet: Fleet, options: PlanOptions = {}): Plan {
  const utilization = options.gpuMemoryUtilization ?? defaultGpuMemoryUtilization;
  const requested = options.context;
  const { vllm, llamacpp } = quantizationsFor(facts);
  const candidates: PlanCandidate[] = [];
  for (const pool of fleet.pools) {
    for (const slot of gpuSlots(pool)) {
      for (const quantization of vllm) candidates.push(evaluate(facts, slot, "vllm", quantization, utilization, requested));
      for (const quantization of llamacpp) candidates.push(evaluate(facts, slot, "llamacpp", quantization, utilization, requested));
    }
  }
  for (const slot of cpuSlots(fleet)) {
    for (const quantization of llamacpp) candidates.push(evaluate(facts, slot, "llamacpp", quantization, utilization, requested));
  }
  const bits = new Map<string, number>();
  const precision = (quantization: string): number => {
    let value = bits.get(quantization);
    if (value === undefined) {
      // Tenths of a bit: F16 GGUF (F32 norms) and bf16 are the same precision to a reader.
      value = Math.round(bitsPerWeight(facts, quantization as Quantization) * 10) / 10;
      bits.set(quantization, value);
    }
    return value;
  };
  candidates.sort(
    (a, b) =>
      Number(b.fits) - Number(a.fits) ||
      Number(a.gpus === 0) - Number(b.gpus === 0) ||
      a.gpus - b.gpus ||
      precision(b.quantization) - precision(a.quantization) ||
      Number(a.engine === "llamacpp") - Number(b.engine === "llamacpp") ||
      b.max_context - a.max_context ||
      a.pool.card_memory_bytes - b.pool.card_memory_bytes,
  );
  return {
    source: facts.source,
    architecture: planArchitecture(facts),
    gpu_memory_utilization: utilization,
    ...(requested !== undefined ? { requested_context: requested } : {}),
    candidates,
  };
}

function planArchitecture(facts: ModelFacts): PlanArchitecture {
  const architecture = facts.architecture;
  return {
    model_type: architecture.modelType,
    layers: architecture.layers,
    attention_heads: architecture.attentionHeads,
    kv_heads: architecture.kvHeads,
    head_dim: architecture.headDim,
    hidden_size: architecture.hiddenSize,
    vocab_size: architecture.vocabSize,
    trained_context: architecture.trainedContext,
    parameters: facts.parameters,
    kv_bytes_per_token: kvBytesPerToken(architecture),
    checkpoint_dtype: facts.checkpoint.dtype,
    checkpoint_bytes: facts.checkpoint.bytes,
    ...(architecture.moe ? { experts: architecture.moe.experts, experts_per_token: architecture.moe.expertsPerToken } : {}),
    ...(architecture.slidingWindow
      ? { sliding_window: { window: architecture.slidingWindow.window, sliding_layers: architecture.slidingWindow.slidingLayers } }
      : {}),
    ...(architecture.mla ? { mla: { kv_lora_rank: architecture.mla.kvLoraRank, qk_rope_head_dim: architecture.mla.qkRopeHeadDim } } : {}),
  };
}
