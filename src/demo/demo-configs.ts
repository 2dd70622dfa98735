/**
 * The config.json files of the demo's models, as their publishers ship them
 * (copied from src/plan/fixtures). The demo writes each beside header-only
 * safetensors, so the planner reads a real layout without real weights.
 */
export const qwen25_7bConfig = {
  "architectures": [
    "Qwen2ForCausalLM"
  ],
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "eos_token_id": 151645,
  "hidden_act": "silu",
  "initializer_range": 0.02,
  "max_position_embeddings": 32768,
  "model_type": "qwen2",
  "rope_theta": 1000000.0,
  "sliding_window": 131072,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 152064,
  "hidden_size": 3584,
  "intermediate_size": 18944,
  "max_window_layers": 28,
  "num_attention_heads": 28,
  "num_hidden_layers": 28,
  "num_key_value_heads": 4,
  "rms_norm_eps": 1e-06
} as const;

export const llama31_8bConfig = {
  "architectures": [
    "LlamaForCausalLM"
  ],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 128000,
  "hidden_act": "silu",
  "initializer_range": 0.02,
  "max_position_embeddings": 131072,
  "mlp_bias": false,
  "model_type": "llama",
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": {
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
    "rope_type": "llama3"
  },
  "rope_theta": 500000.0,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "use_cache": true,
  "vocab_size": 128256,
  "eos_token_id": 128001,
  "hidden_size": 4096,
  "intermediate_size": 14336,
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "transformers_version": "4.43.0.dev0"
} as const;

export const llama33_70bConfig = {
  "architectures": [
    "LlamaForCausalLM"
  ],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 128000,
  "hidden_act": "silu",
  "initializer_range": 0.02,
  "max_position_embeddings": 131072,
  "mlp_bias": false,
  "model_type": "llama",
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": {
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
    "rope_type": "llama3"
  },
  "rope_theta": 500000.0,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "use_cache": true,
  "vocab_size": 128256,
  "eos_token_id": [
    128001,
    128008,
    128009
  ],
  "hidden_size": 8192,
  "intermediate_size": 28672,
  "num_attention_heads": 64,
  "num_hidden_layers": 80,
  "num_key_value_heads": 8,
  "transformers_version": "4.47.0.dev0"
} as const;


export const qwen25_14bConfig = {
  "architectures": [
    "Qwen2ForCausalLM"
  ],
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "eos_token_id": 151645,
  "hidden_act": "silu",
  "initializer_range": 0.02,
  "max_position_embeddings": 32768,
  "model_type": "qwen2",
  "rope_theta": 1000000.0,
  "sliding_window": 131072,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 152064,
  "hidden_size": 5120,
  "intermediate_size": 13824,
  "max_window_layers": 70,
  "num_attention_heads": 40,
  "num_hidden_layers": 48,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-06
} as const;

/** Qwen/Qwen3-Embedding-0.6B: a Qwen3 causal LM with tied embeddings, served for its last hidden state. */
export const qwen3Embedding06bConfig = {
  "architectures": [
    "Qwen3ForCausalLM"
  ],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "eos_token_id": 151643,
  "head_dim": 128,
  "hidden_act": "silu",
  "hidden_size": 1024,
  "initializer_range": 0.02,
  "intermediate_size": 3072,
  "max_position_embeddings": 32768,
  "max_window_layers": 28,
  "model_type": "qwen3",
  "num_attention_heads": 16,
  "num_hidden_layers": 28,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-06,
  "rope_scaling": null,
  "rope_theta": 1000000,
  "sliding_window": null,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 151669
} as const;

export const qwen25_05bConfig = {
  "architectures": [
    "Qwen2ForCausalLM"
  ],
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "eos_token_id": 151645,
  "hidden_act": "silu",
  "hidden_size": 896,
  "initializer_range": 0.02,
  "intermediate_size": 4864,
  "max_position_embeddings": 32768,
  "max_window_layers": 21,
  "model_type": "qwen2",
  "num_attention_heads": 14,
  "num_hidden_layers": 24,
  "num_key_value_heads": 2,
  "rms_norm_eps": 1e-06,
  "rope_theta": 1000000.0,
  "sliding_window": 32768,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 151936
} as const;

/**
 * Qwen/Qwen3-Reranker-0.6B: the same Qwen3 body as the embedding model above
 * (28 layers, 1024 wide, 16 heads over 8 KV heads of 128, tied embeddings,
 * the 151,669-token vocabulary), published as a causal LM that scores a
 * query and document pair by its "yes" and "no" logits. Its own
 * config.json was not at hand: every figure here is Qwen3-0.6B's, which it
 * is built on, but for its vocabulary (vLLM's example names 151,669 logits)
 * and 40,960 positions, which is Qwen3's usual figure and unconfirmed for
 * this checkpoint; its model card says 32k of context.
 */
export const qwen3Reranker06bConfig = {
  "architectures": [
    "Qwen3ForCausalLM"
  ],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "eos_token_id": 151645,
  "head_dim": 128,
  "hidden_act": "silu",
  "hidden_size": 1024,
  "initializer_range": 0.02,
  "intermediate_size": 3072,
  "max_position_embeddings": 40960,
  "max_window_layers": 28,
  "model_type": "qwen3",
  "num_attention_heads": 16,
  "num_hidden_layers": 28,
  "num_key_value_heads": 8,
  "rms_norm_eps": 1e-06,
  "rope_scaling": null,
  "rope_theta": 1000000,
  "sliding_window": null,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 151669
} as const;

/**
 * nomic-ai/nomic-embed-text-v1.5: a 137M BERT-style encoder (NomicBert: 12
 * layers, 768 wide, 12 heads, rotary positions, a SwiGLU feed-forward of
 * 3072, fused QKV without biases) with BERT's vocabulary padded to 30,528,
 * giving 768-dimension embeddings. The keys the planner reads, in the
 * config's own GPT-2-style names; it was trained to 2,048 positions, which
 * its GGUF gives as the context length.
 */
export const nomicEmbedTextV15Config = {
  "activation_function": "swiglu",
  "architectures": [
    "NomicBertModel"
  ],
  "max_trained_positions": 2048,
  "model_type": "nomic_bert",
  "n_embd": 768,
  "n_head": 12,
  "n_inner": 3072,
  "n_layer": 12,
  "n_positions": 2048,
  "qkv_proj_bias": false,
  "rotary_emb_base": 1000,
  "rotary_emb_fraction": 1.0,
  "torch_dtype": "float32",
  "type_vocab_size": 2,
  "vocab_size": 30528
} as const;
