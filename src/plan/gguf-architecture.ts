import type { Architecture } from "./architecture.js";
import { fieldMissing, slidingLayerCount } from "./architecture.js";
import { ggmlTensorBytes, ggmlTypeById, ggufFileTypes } from "../catalog/index.js";

/** GGUF metadata as @huggingface/gguf returns it: plain keys to values. */
export type GgufMetadata = Readonly<Record<string, unknown>>;

export interface GgufTensor {
  readonly name: string;
  readonly shape: readonly bigint[] | readonly number[];
  /** GGMLQuantizationType id. */
  readonly dtype: number;
}

function numberAt(metadata: GgufMetadata, key: string): number | undefined {
  const value = metadata[key];
  if (typeof value === "number") return value;
  if (typeof value === "bigint") return Number(value);
  // Some architectures store per-layer values (head_count_kv per layer): the largest bounds the cache.
  if (Array.isArray(value) && value.length > 0) {
    const numbers = value.map((item) => (typeof item === "bigint" ? Number(item) : typeof item === "number" ? item : Number.NaN));
    return Math.max(...numbers.filter((item) => Number.isFinite(item)));
  }
  return undefined;
}

/** GGUF architecture names to transformers model_type where the rules differ by family. */
const modelTypeOfGgufArchitecture: Readonly<Record<string, string>> = {
  deepseek2: "deepseek_v2",
  qwen2moe: "qwen2_moe",
  qwen3moe: "qwen3_moe",
};

/** The transformers model_type a GGUF `general.architecture` stands for, so a GGUF and a config.json compare. */
export function ggufModelType(architecture: string): string {
  return modelTypeOfGgufArchitecture[architecture] ?? architecture;
}

/**
 * The architecture from GGUF metadata (llama.cpp's key names:
 * `{arch}.block_count`, `{arch}.attention.head_count_kv`, ...). `file`
 * names the file in errors.
 */
export function architectureFromGguf(metadata: GgufMetadata, tensors: readonly GgufTensor[], file: string): Architecture {
  const architecture = metadata["general.architecture"];
  if (typeof architecture !== "string") throw fieldMissing("general.architecture", file, "the metadata keys are named after it");
  const key = (name: string): string => `${architecture}.${name}`;
  const need = (name: string, why: string): number => {
    const value = numberAt(metadata, key(name));
    if (value === undefined) throw fieldMissing(key(name), file, why);
    return value;
  };
  const layers = need("block_count", "the KV cache has one entry per layer");
  const hiddenSize = need("embedding_length", "embedding and projection sizes");
  const attentionHeads = need("attention.head_count", "tensor parallel must divide the heads");
  const kvHeads = numberAt(metadata, key("attention.head_count_kv")) ?? attentionHeads;
  const headDim = numberAt(metadata, key("attention.key_length")) ?? hiddenSize / attentionHeads;
  const trainedContext = need("context_length", "the largest context is capped at the trained context");
  const tokens = metadata["tokenizer.ggml.tokens"];
  const vocabSize = numberAt(metadata, key("vocab_size")) ?? (Array.isArray(tokens) ? tokens.length : undefined);
  if (vocabSize === undefined) throw fieldMissing(`${key("vocab_size")} or tokenizer.ggml.tokens`, file, "embedding and output head size");
  const modelType = ggufModelType(architecture);

  const experts = numberAt(metadata, key("expert_count"));
  const expertFeedForward = numberAt(metadata, key("expert_feed_forward_length"));
  const feedForward = numberAt(metadata, key("feed_forward_length"));
  const moe =
    experts !== undefined && experts > 1
      ? {
          experts,
          expertsPerToken: need("expert_used_count", "experts used per token"),
          expertIntermediateSize: expertFeedForward ?? feedForward ?? 0,
          sharedExperts: numberAt(metadata, key("expert_shared_count")) ?? 0,
          sharedIntermediateSize:
            numberAt(metadata, key("expert_shared_feed_forward_length")) ??
            (numberAt(metadata, key("expert_shared_count")) ?? 0) * (expertFeedForward ?? 0),
          denseLayers: numberAt(metadata, key("leading_dense_block_count")) ?? 0,
        }
      : undefined;

  const kvLoraRank = numberAt(metadata, key("attention.kv_lora_rank"));
  let mla: Architecture["mla"];
  if (kvLoraRank !== undefined) {
    const rope = need("rope.dimension_count", "MLA caches the rope part of each key");
    mla = {
      kvLoraRank,
      qkRopeHeadDim: rope,
      qkNopeHeadDim: headDim - rope,
      vHeadDim: numberAt(metadata, key("attention.value_length")) ?? headDim - rope,
      qLoraRank: numberAt(metadata, key("attention.q_lora_rank")),
    };
  }
  const window = numberAt(metadata, key("attention.sliding_window"));
  const slidingWindow =
    window !== undefined && window > 0 && window < trainedContext
      ? { window, slidingLayers: slidingLayerCount(modelType, layers, numberAt(metadata, key("attention.sliding_window_pattern"))) }
      : undefined;

  return {
    modelType,
    layers,
    hiddenSize,
    attentionHeads,
    kvHeads,
    headDim,
    vocabSize,
    trainedContext,
    // llama.cpp writes no output.weight when the head reuses the embedding.
    tiedEmbeddings: !tensors.some((tensor) => tensor.name === "output.weight"),
    intermediateSize: feedForward,
    attentionBias: tensors.some((tensor) => tensor.name.endsWith("attn_k.bias")),
    qkNorm: tensors.some((tensor) => tensor.name.endsWith("attn_k_norm.weight")),
    normsPerLayer: modelType === "gemma2" || modelType === "gemma3" ? 4 : 2,
    slidingWindow,
    moe,
    mla,
  };
}

/** Parameters and exact bytes of a GGUF file's tensors, from shapes and ggml block layouts. */
export function countGgufTensors(tensors: readonly GgufTensor[], file: string): { parameters: number; bytes: number } {
  let parameters = 0;
  let bytes = 0;
  for (const tensor of tensors) {
    const elements = tensor.shape.reduce<number>((product, dimension) => product * Number(dimension), 1);
    const type = ggmlTypeById(tensor.dtype);
    if (type === undefined) throw fieldMissing(`a known ggml type for tensor ${tensor.name} (type id ${tensor.dtype})`, file, "its bytes per weight");
    parameters += elements;
    bytes += ggmlTensorBytes(type, elements);
  }
  return { parameters, bytes };
}

/** general.file_type as a name ("Q4_K_M"); undefined when absent or unknown. */
export function ggufFileTypeName(metadata: GgufMetadata): string | undefined {
  const fileType = numberAt(metadata, "general.file_type");
  return fileType === undefined ? undefined : ggufFileTypes[fileType];
}
