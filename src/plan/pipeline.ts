import type { Architecture } from "./architecture.js";
import { tensorInventory } from "./tensor-inventory.js";
import { measuredScale, tensorBytes, tensorParallelShare, type Quantization } from "./weights.js";

/**
 * How a replica that spans nodes divides the model. vLLM runs tensor
 * parallel inside a node (the fast NVLink domain) and pipeline parallel
 * across nodes: each node holds a contiguous run of layers. SGLang runs one
 * tensor-parallel group over every card of every node.
 */
export interface Parallelism {
  /** Ranks each layer is split over. */
  readonly tensor: number;
  /** Pipeline stages, one per node for vLLM; 1 when there is no pipeline. */
  readonly pipeline: number;
}

/**
 * Layers per pipeline stage, as vLLM's get_pp_indices splits them: an even
 * share each, and the remainder given one layer apiece to the stages just
 * before the last (the last stage also carries the LM head, so it is spared).
 * 61 layers over 2 stages is 31 + 30.
 */
export function pipelineStageLayers(layers: number, stages: number): number[] {
  const share = Math.floor(layers / stages);
  const counts = Array.from({ length: stages }, () => share);
  const remainder = layers % stages;
  // remainder < stages, so the indices run from stages − 2 down to 0 at most.
  for (let offset = 2; offset < remainder + 2; offset += 1) counts[stages - offset] = share + 1;
  return counts;
}

/** Why a pipeline of `stages` cannot be made of `layers` layers; undefined when it can. */
export function pipelineStagesReason(stages: number, layers: number): string | undefined {
  if (stages <= layers) return undefined;
  return `${stages} pipeline stages need at least ${stages} layers, the model has ${layers}`;
}

/** The most layers any stage holds: what the busiest card's KV cache is sized by. */
export function largestStageLayers(layers: number, stages: number): number {
  return Math.max(...pipelineStageLayers(layers, stages));
}

/**
 * Weights on the busiest card of a tensor × pipeline replica: every stage's
 * layers at its tensor-parallel share, the embedding on the first stage, the
 * final norm and LM head on the last (both when the embeddings are tied, as
 * vLLM's last rank then loads its own copy). With one stage this is
 * weightsBytesPerCardTensorParallel.
 */
export function weightsBytesPerCardPipeline(
  architecture: Architecture,
  parameters: number,
  quantization: Quantization,
  parallelism: Parallelism,
): number {
  const inventory = tensorInventory(architecture);
  const perLayer = new Array<number>(architecture.layers).fill(0);
  let first = 0;
  let last = 0;
  for (const tensor of inventory) {
    const share = tensorParallelShare(tensor, tensorBytes(tensor, quantization, architecture), architecture, parallelism.tensor);
    if (tensor.layer !== undefined) perLayer[tensor.layer] = (perLayer[tensor.layer] ?? 0) + share;
    else if (tensor.role === "token_embd") {
      first += share;
      if (architecture.tiedEmbeddings) last += share;
    } else last += share;
  }
  const stages = pipelineStageLayers(architecture.layers, parallelism.pipeline);
  let busiest = 0;
  let start = 0;
  stages.forEach((count, stage) => {
    let bytes = 0;
    for (let layer = start; layer < start + count; layer += 1) bytes += perLayer[layer] ?? 0;
    if (stage === 0) bytes += first;
    if (stage === stages.length - 1) bytes += last;
    busiest = Math.max(busiest, bytes);
    start += count;
  });
  return Math.round(busiest * measuredScale(architecture, parameters, inventory));
}
