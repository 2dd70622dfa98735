import type { Architecture } from "./architecture.js";
import { ggmlTensorBytes, type GgmlTypeName } from "../catalog/index.js";
import { inventoryParameters, isMatrix, tensorElements, tensorInventory, tensorRowLength, type InventoryTensor } from "./tensor-inventory.js";

/** Quantisations GPU engines (vLLM) load from a 16-bit checkpoint. */
export const gpuEngineQuantizations = ["bf16", "fp16", "fp8", "int8", "int4"] as const;
export type GpuEngineQuantization = (typeof gpuEngineQuantizations)[number];

/** GGUF types the planner offers for llama.cpp (file types, i.e. whole-file mixes). */
export const ggufQuantizationsPlanned = ["F16", "Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "Q4_0", "IQ4_XS"] as const;
export type GgufQuantization = (typeof ggufQuantizationsPlanned)[number];

export function isGgufQuantization(value: string): value is GgufQuantization {
  return (ggufQuantizationsPlanned as readonly string[]).includes(value);
}

/**
 * AWQ/GPTQ int4 with group size 128: 4 bits per weight, plus per group of
 * 128 weights one fp16 scale and one packed 4-bit zero point:
 * (128 × 4 + 16 + 4) / 128 = 4.15625 bits. GPTQ's g_idx (one int32 per input
 * channel per matrix) adds under 0.01 bits on 4096-wide layers and is left out.
 * Checked against hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4 (5.73 GB:
 * 6.98 B linear weights at 4.156 bits + 1.05 B embedding/head weights at 16).
 */
export const int4GroupSize = 128;
export const int4BitsPerWeight = (int4GroupSize * 4 + 16 + 4) / int4GroupSize;

/** Tensors vLLM's fp8/int8/int4 methods leave at 16 bits: embeddings, the LM head, MoE routers, norms. */
function keptAt16Bits(tensor: InventoryTensor): boolean {
  return !isMatrix(tensor) || tensor.role === "token_embd" || tensor.role === "output" || tensor.role === "ffn_gate_inp";
}

function gpuTensorBytes(tensor: InventoryTensor, quantization: GpuEngineQuantization): number {
  const elements = tensorElements(tensor);
  if (quantization === "bf16" || quantization === "fp16" || keptAt16Bits(tensor)) return elements * 2;
  const rows = elements / tensorRowLength(tensor);
  switch (quantization) {
    case "fp8":
      // Per-tensor scales: a few bytes per matrix.
      return elements;
    case "int8":
      // W8A8/W8A16 with one fp16 scale per output channel.
      return elements + rows * 2;
    case "int4":
      return (elements * int4BitsPerWeight) / 8;
  }
}

/**
 * llama.cpp's "use more bits" layers for the _M mixes: the first and last
 * eighth of the layers and every third one between (llama-quant.cpp).
 */
export function usesMoreBits(layer: number, layers: number): boolean {
  const eighth = Math.floor(layers / 8);
  return layer < eighth || layer >= Math.floor((7 * layers) / 8) || (layer - eighth) % 3 === 2;
}

/**
 * k-quants and IQ4_XS pack 256 weights per super-block; a row whose length
 * is not a multiple of 256 falls back to a 32-wide type (llama-quant.cpp).
 * Qwen2.5-72B's ffn_down rows are 29568 long, so its Q4_K_M is 6% larger
 * than a 4.9-bit guess.
 */
function fallbackForRow(type: GgmlTypeName, rowLength: number): GgmlTypeName {
  if (rowLength % 256 === 0) return type;
  switch (type) {
    case "Q2_K":
    case "Q3_K":
    case "IQ4_XS":
      return "IQ4_NL";
    case "Q4_K":
      return "Q5_0";
    case "Q5_K":
      return "Q5_1";
    case "Q6_K":
      return "Q8_0";
    default:
      return type;
  }
}

const baseType: Record<GgufQuantization, GgmlTypeName> = {
  F16: "F16",
  Q8_0: "Q8_0",
  Q6_K: "Q6_K",
  Q5_K_M: "Q5_K",
  Q4_K_M: "Q4_K",
  Q4_0: "Q4_0",
  IQ4_XS: "IQ4_XS",
};

/**
 * The type llama-quantize gives one tensor for a file type: the mix rules of
 * llama.cpp's llama_tensor_get_type that move the size by more than a
 * fraction of a percent. Q4_K_M is "Q4_K, with Q6_K for the output head and
 * for attn_v and ffn_down in the use-more-bits layers"; 8-expert models
 * (Mixtral) keep attn_k/attn_v at Q8_0 and attn_output at Q5_K; 70B-class
 * Llama lifts attn_v from Q4_K to Q5_K.
 */
export function ggufTensorType(quantization: GgufQuantization, tensor: InventoryTensor, architecture: Architecture): GgmlTypeName {
  // Norms, biases and MoE routers are never quantized.
  if (!isMatrix(tensor) || tensor.role === "ffn_gate_inp") return "F32";
  if (quantization === "F16") return "F16";
  const rowLength = tensorRowLength(tensor);
  const isOutput = tensor.role === "output" || (tensor.role === "token_embd" && architecture.tiedEmbeddings);
  if (isOutput) {
    if (rowLength % 256 !== 0) return "Q8_0";
    return quantization === "Q8_0" ? "Q8_0" : "Q6_K";
  }
  let type = baseType[quantization];
  const eightExperts = architecture.moe?.experts === 8;
  const mixWithMoreBits = quantization === "Q4_K_M" || quantization === "Q5_K_M";
  const layer = tensor.layer ?? 0;
  switch (tensor.role) {
    case "attn_v": {
      if (mixWithMoreBits && usesMoreBits(layer, architecture.layers)) type = "Q6_K";
      else if (quantization === "IQ4_XS" && architecture.attentionHeads / architecture.kvHeads >= 4) type = "Q5_K";
      if (architecture.layers === 80 && architecture.modelType === "llama" && type === "Q4_K") type = "Q5_K";
      if (eightExperts) type = "Q8_0";
      break;
    }
    case "attn_k":
      if (eightExperts) type = "Q8_0";
      break;
    case "attn_output":
      if (eightExperts && (quantization === "Q4_K_M" || quantization === "IQ4_XS")) type = "Q5_K";
      break;
    case "ffn_down":
    case "ffn_down_exps":
    case "ffn_down_shexp":
      if (mixWithMoreBits && usesMoreBits(layer, architecture.layers)) type = "Q6_K";
      break;
    default:
      break;
  }
  return fallbackForRow(type, rowLength);
}

function ggufTensorBytes(tensor: InventoryTensor, quantization: GgufQuantization, architecture: Architecture): number {
  return ggmlTensorBytes(ggufTensorType(quantization, tensor, architecture), tensorElements(tensor));
}

export type Quantization = GpuEngineQuantization | GgufQuantization;

export function tensorBytes(tensor: InventoryTensor, quantization: Quantization, architecture: Architecture): number {
  return isGgufQuantization(quantization) ? ggufTensorBytes(tensor, quantization, architecture) : gpuTensorBytes(tensor, quantization);
}

/**
 * Scales inventory bytes to the checkpoint's measured parameter count. The
 * inventory decides how bytes divide between roles; the checkpoint decides
 * how many parameters there are (an architecture detail the inventory misses
 * — an extra bias, a vision tower — must not be lost).
 */
export function measuredScale(architecture: Architecture, parameters: number, inventory: readonly InventoryTensor[]): number {
  const predicted = inventoryParameters(inventory);
  return predicted > 0 ? parameters / predicted : 1;
}

/** Bytes of all weights of a model of `parameters` parameters stored as `quantization`. */
export function weightsBytes(architecture: Architecture, parameters: number, quantization: Quantization): number {
  const inventory = tensorInventory(architecture);
  const bytes = inventory.reduce((sum, tensor) => sum + tensorBytes(tensor, quantization, architecture), 0);
  return Math.round(bytes * measuredScale(architecture, parameters, inventory));
}

/**
 * Weights on the busiest card of a tensor-parallel replica (vLLM). Our
 * choice, matching vLLM's layers: the embedding and LM head are vocab-
 * parallel, so they are split like every other linear layer; norms, MoE
 * routers and MLA's latent down-projections are replicated on every rank;
 * K and V projections are split by KV head and replicated once the cards
 * outnumber the KV heads. MoE experts are split by width (no expert
 * parallelism), so every rank holds a slice of every expert.
 */
export function weightsBytesPerCardTensorParallel(
  architecture: Architecture,
  parameters: number,
  quantization: Quantization,
  cards: number,
): number {
  const inventory = tensorInventory(architecture);
  let bytes = 0;
  for (const tensor of inventory) bytes += tensorParallelShare(tensor, tensorBytes(tensor, quantization, architecture), architecture, cards);
  return Math.round(bytes * measuredScale(architecture, parameters, inventory));
}

/** One rank's share of a tensor of `whole` bytes under tensor parallelism over `cards` ranks. */
export function tensorParallelShare(tensor: InventoryTensor, whole: number, architecture: Architecture, cards: number): number {
  if (tensor.split === "replicated") return whole;
  if (tensor.split === "kv_heads") return whole / Math.min(cards, architecture.kvHeads);
  return whole / cards;
}

/**
 * Weights on the busiest card when llama.cpp splits layers over cards
 * (--split-mode layer): whole layers per card, the output head on the last
 * card with its share of layers; the token embedding stays in host memory
 * (llama.cpp keeps the input layer on the CPU).
 */
export function weightsBytesPerCardLayerSplit(
  architecture: Architecture,
  parameters: number,
  quantization: Quantization,
  cards: number,
): number {
  const inventory = tensorInventory(architecture);
  let layerBytes = 0;
  let outputBytes = 0;
  for (const tensor of inventory) {
    const bytes = tensorBytes(tensor, quantization, architecture);
    if (tensor.layer !== undefined) layerBytes += bytes;
    else if (tensor.role === "output" || (tensor.role === "token_embd" && architecture.tiedEmbeddings)) outputBytes += bytes;
  }
  const layersOnLastCard = Math.ceil(architecture.layers / cards);
  const bytes = (layerBytes * layersOnLastCard) / architecture.layers + outputBytes;
  return Math.round(bytes * measuredScale(architecture, parameters, inventory));
}
