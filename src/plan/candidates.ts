import { type Fleet, type Pool, largestFreeOnOneNode, largestNode } from "../fleet/index.js";
import { kvBytesPerToken } from "./kv-cache.js";
import { defaultGpuMemoryUtilization, type EngineKind } from "./memory.js";
import type { ModelFacts } from "./model-facts.js";
import { cardCounts, evaluate, planPoolOf, quantizationsFor, type Slot } from "./evaluate-candidate.js";
import { multiNodeCandidates } from "./multi-node-candidates.js";
import type { Plan, PlanArchitecture, PlanCandidate, PlanOptions } from "./plan-types.js";
import type { Quantization } from "./weights.js";
import { totalWeightsBytes } from "./weights-per-card.js";

export { cardCounts } from "./evaluate-candidate.js";
export type { Plan, PlanArchitecture, PlanCandidate, PlanOptions, PlanPool } from "./plan-types.js";

function cardSlots(pool: Pool): Slot[] {
  const planPool = planPoolOf(pool);
  const mostFree = largestFreeOnOneNode(pool);
  // A replica lives on one node: the largest node bounds the card count,
  // however many cards the pool has in total.
  return cardCounts
    .filter((cards) => cards <= largestNode(pool))
    .map((cards) => ({
      pool: planPool,
      cardMemoryBytes: pool.cardMemoryBytes,
      cards,
      nodes: 1,
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
      nodes: 1,
      onCpu: true,
      unavailable: undefined,
    }));
}

/** Effective bits per weight of a candidate's quantisation: the precision order of the list. */
function bitsPerWeight(facts: ModelFacts, quantization: Quantization): number {
  return (totalWeightsBytes(facts, quantization) * 8) / facts.parameters;
}

/** vLLM first (pipeline stages cross the network once per step, SGLang's one tensor group on every layer), llama.cpp last. */
const engineOrder: Record<EngineKind, number> = { vllm: 0, sglang: 1, llamacpp: 2 };

/**
 * Every pool × quantisation × cards-per-replica candidate, best first:
 * fitting before missing, GPU before CPU, fewer nodes, fewer cards per
 * node, higher precision, vLLM before SGLang before llama.cpp, longer
 * context. Replicas over several nodes (multiNodeCandidates) join where no
 * node of a pool holds the model, or where `nodes` asks for them.
 */
export function planCandidates(facts: ModelFacts, fleet: Fleet, options: PlanOptions = {}): Plan {
  const utilization = options.gpuMemoryUtilization ?? defaultGpuMemoryUtilization;
  const requested = options.context;
  const { vllm, llamacpp } = quantizationsFor(facts);
  const candidates: PlanCandidate[] = [];
  const askedNodes = options.nodes;
  for (const pool of fleet.pools) {
    const single: PlanCandidate[] = [];
    for (const slot of cardSlots(pool)) {
      for (const quantization of vllm) single.push(evaluate(facts, slot, "vllm", quantization, utilization, requested));
      for (const quantization of llamacpp) single.push(evaluate(facts, slot, "llamacpp", quantization, utilization, requested));
    }
    if (askedNodes === undefined || askedNodes === 1) candidates.push(...single);
    // A model one node holds is never split over a network unless asked.
    const oneNodeHolds = () =>
      cardSlots(pool).some((slot) => vllm.some((quantization) => evaluate(facts, { ...slot, unavailable: undefined }, "vllm", quantization, utilization, requested).fits));
    if ((askedNodes !== undefined && askedNodes > 1) || (askedNodes === undefined && vllm.length > 0 && !oneNodeHolds())) {
      candidates.push(...multiNodeCandidates({ facts, pool, quantizations: vllm, utilization, requested, nodes: askedNodes }));
    }
  }
  if (askedNodes === undefined || askedNodes === 1) {
    for (const slot of cpuSlots(fleet)) {
      for (const quantization of llamacpp) candidates.push(evaluate(facts, slot, "llamacpp", quantization, utilization, requested));
    }
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
      a.nodes - b.nodes ||
      a.gpus - b.gpus ||
      precision(b.quantization) - precision(a.quantization) ||
      engineOrder[a.engine] - engineOrder[b.engine] ||
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
    parameters_from: facts.provenance.parameters,
    ...(architecture.moe ? { experts: architecture.moe.experts, experts_per_token: architecture.moe.expertsPerToken } : {}),
    ...(architecture.slidingWindow
      ? { sliding_window: { window: architecture.slidingWindow.window, sliding_layers: architecture.slidingWindow.slidingLayers } }
      : {}),
    ...(architecture.mla ? { mla: { kv_lora_rank: architecture.mla.kvLoraRank, qk_rope_head_dim: architecture.mla.qkRopeHeadDim } } : {}),
  };
}
