import type { EngineKind } from "./memory.js";
import type { ModelFacts } from "./model-facts.js";
import { weightsBytesPerCardPipeline } from "./pipeline.js";
import {
  weightsBytes,
  weightsBytesPerCardLayerSplit,
  weightsBytesPerCardTensorParallel,
  type GpuEngineQuantization,
  type Quantization,
} from "./weights.js";

/**
 * Weights priced from a model's facts, shared by the planner's candidates and
 * placement's per-card demand, so `ctl model plan` and the placement of a
 * replica can never disagree on what a card must hold.
 */

/** The 16-bit precision a safetensors checkpoint loads at: its own (fp16 for an F16 checkpoint, else bf16). */
export function sixteenBitQuantization(facts: ModelFacts): GpuEngineQuantization {
  return facts.checkpoint.dtype === "F16" ? "fp16" : "bf16";
}

/**
 * Whole-model bytes for a quantisation. A GGUF source and a pre-quantised
 * checkpoint are priced at their stored bytes: nothing to predict.
 */
export function totalWeightsBytes(facts: ModelFacts, quantization: Quantization): number {
  if (facts.checkpoint.format === "gguf" || facts.checkpoint.quantization) return facts.checkpoint.bytes;
  return weightsBytes(facts.architecture, facts.parameters, quantization);
}

/**
 * Weights on the busiest card (or the host, `onCpu`) of a replica over
 * `cards` tensor-parallel cards; `pipelineStages` > 1 when vLLM splits the
 * replica's layers into stages across nodes (then `cards` is each stage's
 * tensor-parallel size). SGLang splits like vLLM's tensor parallel.
 */
export function weightsPerCard(facts: ModelFacts, quantization: Quantization, engine: EngineKind, cards: number, onCpu: boolean, pipelineStages = 1): number {
  const total = totalWeightsBytes(facts, quantization);
  if (onCpu) return total;
  const split = (at: Quantization): number => {
    if (engine === "llamacpp") return weightsBytesPerCardLayerSplit(facts.architecture, facts.parameters, at, cards);
    if (pipelineStages > 1) return weightsBytesPerCardPipeline(facts.architecture, facts.parameters, at, { tensor: cards, pipeline: pipelineStages });
    return weightsBytesPerCardTensorParallel(facts.architecture, facts.parameters, at, cards);
  };
  if (facts.checkpoint.format === "gguf" || facts.checkpoint.quantization) {
    // Stored bytes are exact but not split by role: share them as the
    // 16-bit layout would (same proportions of sharded and replicated tensors).
    const reference = weightsBytes(facts.architecture, facts.parameters, "bf16");
    return Math.round((total * split("bf16")) / reference);
  }
  return split(quantization);
}
