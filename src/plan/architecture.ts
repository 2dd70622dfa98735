import { z } from "zod";
import { DomainError } from "../errors/light.js";
import { describeIssues } from "../catalog/index.js";

/**
 * What the memory arithmetic needs to know about a model, read from its own
 * config.json or GGUF metadata. Numbers only; where each came from is kept
 * in ModelFacts.
 */
export interface Architecture {
  /** config.json model_type or GGUF general.architecture, e.g. "llama", "qwen2", "deepseek_v2". */
  readonly modelType: string;
  readonly layers: number;
  readonly hiddenSize: number;
  readonly attentionHeads: number;
  readonly kvHeads: number;
  readonly headDim: number;
  readonly vocabSize: number;
  /** The longest context the model was trained for, rope scaling included. */
  readonly trainedContext: number;
  readonly tiedEmbeddings: boolean;
  /** The dense feed-forward width; for MoE models without dense layers it may be absent. */
  readonly intermediateSize: number | undefined;
  /** q/k/v projections carry biases (Qwen2 family). */
  readonly attentionBias: boolean;
  /** Per-head RMS norms on q and k (Qwen3 family). */
  readonly qkNorm: boolean;
  /** RMS norms per decoder layer: 2 for Llama-style, 4 for Gemma-2 (pre and post norms). */
  readonly normsPerLayer: number;
  readonly slidingWindow: SlidingWindow | undefined;
  readonly moe: MixtureOfExperts | undefined;
  readonly mla: MultiHeadLatentAttention | undefined;
}

export interface SlidingWindow {
  /** Tokens a sliding-window layer attends to (and keeps in its KV cache). */
  readonly window: number;
  /** How many of the layers use the window; the others attend to the whole context. */
  readonly slidingLayers: number;
}

export interface MixtureOfExperts {
  readonly experts: number;
  readonly expertsPerToken: number;
  readonly expertIntermediateSize: number;
  readonly sharedExperts: number;
  /** Width of the shared expert block as a whole (DeepSeek: shared experts × expert width). */
  readonly sharedIntermediateSize: number;
  /** Leading layers that keep a dense feed-forward (DeepSeek first_k_dense_replace). */
  readonly denseLayers: number;
}

/** DeepSeek-V2/V3 multi-head latent attention: the KV cache holds one compressed latent per layer. */
export interface MultiHeadLatentAttention {
  readonly kvLoraRank: number;
  readonly qkRopeHeadDim: number;
  readonly qkNopeHeadDim: number;
  readonly vHeadDim: number;
  readonly qLoraRank: number | undefined;
}

// Loose on purpose: config.json files carry dozens of keys we do
// not read, and newer transformers releases add more. Keep only what we read.
const positiveInt = z.number().int().positive();
const ropeScaling = z
  .object({
    type: z.string().optional(),
    rope_type: z.string().optional(),
    factor: z.number().optional(),
    original_max_position_embeddings: z.number().optional(),
  })
  .loose()
  .nullable()
  .optional();

const textConfigSchema = z
  .object({
    model_type: z.string().optional(),
    num_hidden_layers: positiveInt.optional(),
    n_layer: positiveInt.optional(),
    hidden_size: positiveInt.optional(),
    n_embd: positiveInt.optional(),
    num_attention_heads: positiveInt.optional(),
    n_head: positiveInt.optional(),
    num_key_value_heads: positiveInt.nullable().optional(),
    head_dim: positiveInt.nullable().optional(),
    vocab_size: positiveInt.optional(),
    max_position_embeddings: positiveInt.optional(),
    n_positions: positiveInt.optional(),
    max_sequence_length: positiveInt.optional(),
    seq_length: positiveInt.optional(),
    rope_scaling: ropeScaling,
    tie_word_embeddings: z.boolean().optional(),
    intermediate_size: positiveInt.nullable().optional(),
    // GPT-2's name for it, which NomicBert's config keeps (n_embd, n_head, n_layer, n_inner).
    n_inner: positiveInt.nullable().optional(),
    attention_bias: z.boolean().optional(),
    sliding_window: positiveInt.nullable().optional(),
    use_sliding_window: z.boolean().optional(),
    max_window_layers: z.number().int().nonnegative().optional(),
    sliding_window_pattern: positiveInt.optional(),
    layer_types: z.array(z.string()).optional(),
    num_local_experts: positiveInt.optional(),
    num_experts: positiveInt.nullable().optional(),
    n_routed_experts: positiveInt.nullable().optional(),
    num_experts_per_tok: positiveInt.nullable().optional(),
    moe_intermediate_size: positiveInt.nullable().optional(),
    n_shared_experts: z.number().int().nonnegative().nullable().optional(),
    shared_expert_intermediate_size: positiveInt.nullable().optional(),
    first_k_dense_replace: z.number().int().nonnegative().optional(),
    kv_lora_rank: positiveInt.nullable().optional(),
    q_lora_rank: positiveInt.nullable().optional(),
    qk_rope_head_dim: positiveInt.optional(),
    qk_nope_head_dim: positiveInt.optional(),
    v_head_dim: positiveInt.optional(),
  })
  .loose();

const configSchema = textConfigSchema.extend({ text_config: textConfigSchema.optional() });

type TextConfig = z.infer<typeof textConfigSchema>;

export function fieldMissing(field: string, file: string, why: string): DomainError {
  return new DomainError(
    "architecture_field_missing",
    `${file} has no ${field}, which the memory arithmetic needs (${why})`,
    `Check that ${file} is the model's own config (a transformers config.json or GGUF metadata); if the model is new, add ${field} to a local copy and plan from that folder.`,
    [{ where: file, message: `missing ${field}` }],
  );
}

function required<T>(value: T | null | undefined, field: string, file: string, why: string): T {
  if (value === undefined || value === null) throw fieldMissing(field, file, why);
  return value;
}

/**
 * The trained context, rope scaling included, following vLLM's own rule
 * (`_get_and_verify_max_len`): llama3 and longrope configs already state the
 * extended length in max_position_embeddings; YaRN multiplies the original
 * length by the factor (DeepSeek-V2: 4096 × 40 = 163840); linear and dynamic
 * scaling multiply max_position_embeddings. The larger of the two wins, so
 * a config that states both never shrinks.
 */
export function trainedContextFromConfig(maxPositions: number, scaling: TextConfig["rope_scaling"]): number {
  if (!scaling) return maxPositions;
  const kind = scaling.rope_type ?? scaling.type ?? "default";
  const factor = scaling.factor;
  if (factor === undefined || factor <= 1) return maxPositions;
  if (kind === "yarn") {
    const original = scaling.original_max_position_embeddings ?? maxPositions;
    return Math.max(maxPositions, Math.round(original * factor));
  }
  if (kind === "linear" || kind === "dynamic") return Math.max(maxPositions, Math.round(maxPositions * factor));
  return maxPositions;
}

function slidingWindowFromConfig(config: TextConfig, modelType: string, layers: number): SlidingWindow | undefined {
  const window = config.sliding_window ?? undefined;
  if (window === undefined) return undefined;
  if (config.layer_types) {
    const slidingLayers = config.layer_types.filter((type) => type === "sliding_attention").length;
    return slidingLayers > 0 ? { window, slidingLayers } : undefined;
  }
  if (modelType === "gemma2" || config.sliding_window_pattern !== undefined) {
    return { window, slidingLayers: slidingLayerCount(modelType, layers, config.sliding_window_pattern) };
  }
  if (modelType === "qwen2" || modelType === "qwen2_moe" || modelType === "qwen3" || modelType === "qwen3_moe") {
    // Qwen configs carry sliding_window even when it is off (use_sliding_window: false);
    // when on, layers from max_window_layers upward slide.
    if (config.use_sliding_window !== true) return undefined;
    const from = config.max_window_layers ?? layers;
    return from < layers ? { window, slidingLayers: layers - from } : undefined;
  }
  // Mistral-7B v0.1 and others: one window for every layer (Gemma-3 by its family pattern).
  return { window, slidingLayers: slidingLayerCount(modelType, layers, undefined) };
}

/**
 * How many layers slide when the files do not list each layer's kind: the
 * patterns transformers and llama.cpp hard-code per family. Getting this wrong
 * is a silent overcommit: a global layer counted as sliding stops its KV cache
 * growing at the window, and the planner promises a context that runs out of
 * memory at load. One function for config.json and GGUF, so they cannot differ.
 */
export function slidingLayerCount(modelType: string, layers: number, pattern: number | undefined): number {
  // Gemma-2 alternates: even layers slide, odd layers see everything.
  if (modelType === "gemma2") return Math.ceil(layers / 2);
  // Gemma-3: every 6th layer is global (llama.cpp's n_swa_pattern), unless the file says otherwise.
  const every = pattern ?? (modelType.startsWith("gemma3") ? 6 : undefined);
  if (every !== undefined) return layers - Math.floor(layers / every);
  return layers;
}

/**
 * The architecture from a parsed config.json. `file` names the file in errors
 * (e.g. "config.json of Qwen/Qwen2.5-7B@main").
 */
export function architectureFromConfig(raw: unknown, file: string): Architecture {
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) {
    throw new DomainError(
      "source_unreadable",
      `${file} is not a usable config.json: ${describeIssues(parsed.error.issues, "(root)", 1)}`,
      "Point the planner at the model's own config.json (transformers format).",
    );
  }
  // Multimodal models keep the language model's numbers under text_config.
  const top = parsed.data;
  const config: TextConfig = top.text_config ? { ...top.text_config, model_type: top.text_config.model_type ?? top.model_type } : top;
  const modelType = config.model_type ?? "unknown";

  const layers = required(config.num_hidden_layers ?? config.n_layer, "num_hidden_layers", file, "the KV cache has one entry per layer");
  const hiddenSize = required(config.hidden_size ?? config.n_embd, "hidden_size", file, "embedding and projection sizes");
  const attentionHeads = required(config.num_attention_heads ?? config.n_head, "num_attention_heads", file, "tensor parallel must divide the heads");
  // transformers' own convention: no num_key_value_heads means one KV head per attention head.
  const kvHeads = config.num_key_value_heads ?? attentionHeads;
  const headDim = config.head_dim ?? hiddenSize / attentionHeads;
  if (!Number.isInteger(headDim)) throw fieldMissing("head_dim", file, `hidden_size ${hiddenSize} is not a multiple of ${attentionHeads} heads`);
  const vocabSize = required(config.vocab_size, "vocab_size", file, "embedding and output head size");
  const maxPositions = required(
    config.max_position_embeddings ?? config.n_positions ?? config.max_sequence_length ?? config.seq_length,
    "max_position_embeddings",
    file,
    "the largest context is capped at the trained context",
  );

  const experts = config.num_local_experts ?? config.num_experts ?? config.n_routed_experts ?? undefined;
  let moe: MixtureOfExperts | undefined;
  if (experts !== undefined && experts > 1) {
    const expertIntermediateSize = required(
      config.moe_intermediate_size ?? config.intermediate_size,
      "moe_intermediate_size",
      file,
      "each expert's feed-forward width",
    );
    const sharedExperts = config.n_shared_experts ?? (config.shared_expert_intermediate_size ? 1 : 0);
    moe = {
      experts,
      expertsPerToken: required(config.num_experts_per_tok, "num_experts_per_tok", file, "experts used per token"),
      expertIntermediateSize,
      sharedExperts,
      sharedIntermediateSize: config.shared_expert_intermediate_size ?? sharedExperts * expertIntermediateSize,
      denseLayers: config.first_k_dense_replace ?? 0,
    };
  }

  let mla: MultiHeadLatentAttention | undefined;
  if (config.kv_lora_rank !== undefined && config.kv_lora_rank !== null) {
    mla = {
      kvLoraRank: config.kv_lora_rank,
      qkRopeHeadDim: required(config.qk_rope_head_dim, "qk_rope_head_dim", file, "MLA caches the rope part of each key"),
      qkNopeHeadDim: required(config.qk_nope_head_dim, "qk_nope_head_dim", file, "MLA query/key width"),
      vHeadDim: required(config.v_head_dim, "v_head_dim", file, "MLA value width"),
      qLoraRank: config.q_lora_rank ?? undefined,
    };
  }

  const intermediateSize = config.intermediate_size ?? config.n_inner ?? undefined;
  if (intermediateSize === undefined && (!moe || moe.denseLayers > 0)) {
    throw fieldMissing("intermediate_size", file, "the dense feed-forward width");
  }

  return {
    modelType,
    layers,
    hiddenSize,
    attentionHeads,
    kvHeads,
    headDim: mla ? mla.qkNopeHeadDim + mla.qkRopeHeadDim : headDim,
    vocabSize,
    trainedContext: trainedContextFromConfig(maxPositions, config.rope_scaling),
    // transformers defaults tie_word_embeddings to true; Gemma ties, Llama-3.1-8B states false.
    tiedEmbeddings: config.tie_word_embeddings ?? true,
    intermediateSize,
    attentionBias: config.attention_bias ?? (modelType === "qwen2" || modelType === "qwen2_moe"),
    qkNorm: modelType === "qwen3" || modelType === "qwen3_moe",
    normsPerLayer: modelType === "gemma2" || modelType === "gemma3" || modelType === "gemma3_text" ? 4 : 2,
    slidingWindow: slidingWindowFromConfig(config, modelType, layers),
    moe,
    mla,
  };
}
