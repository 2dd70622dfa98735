import { formatContext, formatGiB } from "./format.js";
import { kvCacheBytesPerCard, type KvLayout } from "./kv-cache.js";
import { bytesLeftForKv, maxContext, minimumUsefulContext, runtimeOverheadBytes, usableBytes, type ContextBudget, type EngineKind } from "./memory.js";
import type { ModelFacts } from "./model-facts.js";
import { largestStageLayers, pipelineStagesReason } from "./pipeline.js";
import type { PlanCandidate, PlanPool } from "./plan-types.js";
import { splitsHeadsReason } from "./splits-heads.js";
import { ggufQuantizationsPlanned, type Quantization } from "./weights.js";
import { sixteenBitQuantization, weightsPerCard } from "./weights-per-card.js";
import { type Pool, poolCardsFree, poolCardsTotal } from "../fleet/index.js";

/** Cards per replica the planner tries: powers of two, as tensor parallel engines expect. */
export const cardCounts = [1, 2, 4, 8] as const;

export function quantizationsFor(facts: ModelFacts): { vllm: Quantization[]; llamacpp: Quantization[] } {
  if (facts.checkpoint.format === "gguf") {
    // The file's own type; a file without general.file_type is still planned, labelled "GGUF".
    return { vllm: [], llamacpp: [(facts.ggufFileType ?? "GGUF") as Quantization] };
  }
  if (facts.checkpoint.quantization) return { vllm: [facts.checkpoint.quantization], llamacpp: [] };
  return { vllm: [sixteenBitQuantization(facts), "fp8", "int8", "int4"], llamacpp: [...ggufQuantizationsPlanned] };
}

/** One way to hold a replica: a pool's card size, cards per node and nodes, before engine and quantisation are chosen. */
export interface Slot {
  readonly pool: PlanPool;
  readonly cardMemoryBytes: number;
  /** Cards per node. */
  readonly cards: number;
  /** Nodes per replica. */
  readonly nodes: number;
  readonly onCpu: boolean;
  /** Why this slot cannot be used now regardless of the model (not enough free cards). */
  readonly unavailable: string | undefined;
}

export function planPoolOf(pool: Pool): PlanPool {
  return {
    gpu_class: pool.cardClass,
    fabric: pool.fabric,
    cards_free: poolCardsFree(pool),
    cards_total: poolCardsTotal(pool),
    card_memory_bytes: pool.cardMemoryBytes,
  };
}

/** Tensor ranks per layer and pipeline stages of an engine on a slot. */
function parallelismOf(slot: Slot, engine: EngineKind): { tensor: number; pipeline: number } {
  if (engine === "vllm") return { tensor: slot.cards, pipeline: slot.nodes };
  return { tensor: slot.cards * slot.nodes, pipeline: 1 };
}

export function evaluate(
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
  const parallel = parallelismOf(slot, engine);
  if (engine !== "llamacpp") {
    const reason = splitsHeadsReason(parallel.tensor, architecture.attentionHeads, architecture.kvHeads);
    if (reason) short.push(`tensor parallel: ${reason}`);
  }
  const stagesReason = pipelineStagesReason(parallel.pipeline, architecture.layers);
  if (stagesReason) short.push(`pipeline parallel: ${stagesReason}`);
  const pipelineLayers = stagesReason ? architecture.layers : largestStageLayers(architecture.layers, parallel.pipeline);
  const pipeline = stagesReason ? 1 : parallel.pipeline;
  const kvLayout: KvLayout = engine === "llamacpp" ? "layer_split" : "tensor_parallel";
  const weights = weightsPerCard(facts, quantization, engine, parallel.tensor, slot.onCpu, pipeline);
  const overhead = runtimeOverheadBytes(engine, weights, parallel.tensor * parallel.pipeline);
  const usable = usableBytes(slot.cardMemoryBytes, utilization);
  const budget: ContextBudget = {
    architecture,
    usableBytes: usable,
    weightsBytesPerCard: weights,
    overheadBytesPerCard: overhead,
    cards: slot.onCpu ? 1 : parallel.tensor,
    kvLayout,
    pipelineLayers,
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
    const kvNeeded = kvCacheBytesPerCard(architecture, target, budget.cards, kvLayout, undefined, pipelineLayers);
    short.push(
      `at ${formatContext(target)} context ${where} needs ${formatGiB(kvNeeded)} of KV cache, ${formatGiB(left)} is left after weights and overhead: ${formatGiB(kvNeeded - left)} short (largest context ${formatContext(largest)})`,
    );
  }
  return {
    pool: slot.pool,
    engine,
    quantization,
    gpus: slot.onCpu ? 0 : slot.cards,
    nodes: slot.nodes,
    ...(slot.nodes > 1 ? { parallel } : {}),
    weights_bytes_per_card: weights,
    kv_bytes_per_token: Math.round(kvCacheBytesPerCard(architecture, 1, budget.cards, kvLayout, undefined, pipelineLayers)),
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
