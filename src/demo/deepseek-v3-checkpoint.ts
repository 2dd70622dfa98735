import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { architectureFromConfig, checkpointTensors, safetensorsHeaderBytes, type SafetensorsTensor } from "../plan/index.js";

/**
 * deepseek-ai/DeepSeek-V3 as the demo's stand-in hub serves it: the
 * publisher's config.json (as in src/plan/fixtures), and 163 header-only
 * shards named as published (model-00001-of-000163.safetensors: the count
 * has six digits) holding its layout in its own format: every projection in
 * FP8 (F8_E4M3) with an F32 weight_scale_inv per 128×128 block, embeddings,
 * norms, routers and the LM head in BF16. The index's total_size is the
 * published 688,586,727,753 bytes; past 64 shards the planner reads that
 * figure and the first shard's dtype rather than every header, as it does on
 * the real hub. The weight map lists the tensors written here, which leave
 * out the multi-token-prediction layer (loaded only for speculative decoding).
 */
export const deepseekV3Repository = "deepseek-ai/DeepSeek-V3";
export const deepseekV3Shards = 163;
export const deepseekV3PublishedTotalSize = 688_586_727_753;

export const deepseekV3Config = {
  "architectures": [
    "DeepseekV3ForCausalLM"
  ],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "aux_loss_alpha": 0.001,
  "bos_token_id": 0,
  "eos_token_id": 1,
  "ep_size": 1,
  "first_k_dense_replace": 3,
  "hidden_act": "silu",
  "hidden_size": 7168,
  "initializer_range": 0.02,
  "intermediate_size": 18432,
  "kv_lora_rank": 512,
  "max_position_embeddings": 163840,
  "model_type": "deepseek_v3",
  "moe_intermediate_size": 2048,
  "moe_layer_freq": 1,
  "n_group": 8,
  "n_routed_experts": 256,
  "n_shared_experts": 1,
  "norm_topk_prob": true,
  "num_attention_heads": 128,
  "num_experts_per_tok": 8,
  "num_hidden_layers": 61,
  "num_key_value_heads": 128,
  "num_nextn_predict_layers": 1,
  "pretraining_tp": 1,
  "q_lora_rank": 1536,
  "qk_nope_head_dim": 128,
  "qk_rope_head_dim": 64,
  "quantization_config": {
    "activation_scheme": "dynamic",
    "fmt": "e4m3",
    "quant_method": "fp8",
    "weight_block_size": [
      128,
      128
    ]
  },
  "rms_norm_eps": 1e-06,
  "rope_scaling": {
    "beta_fast": 32,
    "beta_slow": 1,
    "factor": 40,
    "mscale": 1.0,
    "mscale_all_dim": 1.0,
    "original_max_position_embeddings": 4096,
    "type": "yarn"
  },
  "rope_theta": 10000,
  "routed_scaling_factor": 2.5,
  "scoring_func": "sigmoid",
  "seq_aux": true,
  "tie_word_embeddings": false,
  "topk_group": 4,
  "topk_method": "noaux_tc",
  "torch_dtype": "bfloat16",
  "transformers_version": "4.33.1",
  "use_cache": true,
  "v_head_dim": 128,
  "vocab_size": 129280
} as const;

/** The FP8 block the checkpoint's scales cover (quantization_config.weight_block_size). */
const block = 128;

/** The checkpoint's tensors in its own dtypes: FP8 projections with their block scales, the rest BF16. */
export function deepseekV3Tensors(): SafetensorsTensor[] {
  const architecture = architectureFromConfig(deepseekV3Config, `${deepseekV3Repository}/config.json`);
  const tensors: SafetensorsTensor[] = [];
  for (const tensor of checkpointTensors(architecture)) {
    const [rows = 0, columns = 0] = tensor.shape;
    if (tensor.shape.length === 2 && /_proj(_with_mqa)?\.weight$/.test(tensor.name)) {
      tensors.push({ ...tensor, dtype: "F8_E4M3" });
      tensors.push({ name: `${tensor.name}_scale_inv`, dtype: "F32", shape: [Math.ceil(rows / block), Math.ceil(columns / block)] });
    } else tensors.push(tensor);
  }
  return tensors;
}

export const deepseekV3ShardName = (shard: number) => `model-${String(shard + 1).padStart(5, "0")}-of-${String(deepseekV3Shards).padStart(6, "0")}.safetensors`;

/** Writes the stand-in under `folder` and returns it. */
export async function writeDeepSeekV3Checkpoint(folder: string): Promise<string> {
  await mkdir(folder, { recursive: true });
  await writeFile(join(folder, "config.json"), JSON.stringify(deepseekV3Config, null, 2));
  const tensors = deepseekV3Tensors();
  const perShard = Math.ceil(tensors.length / deepseekV3Shards);
  const weightMap: Record<string, string> = {};
  for (let shard = 0; shard < deepseekV3Shards; shard += 1) {
    const part = tensors.slice(shard * perShard, (shard + 1) * perShard);
    for (const tensor of part) weightMap[tensor.name] = deepseekV3ShardName(shard);
    await writeFile(join(folder, deepseekV3ShardName(shard)), safetensorsHeaderBytes(part));
  }
  await writeFile(join(folder, "model.safetensors.index.json"), JSON.stringify({ metadata: { total_size: deepseekV3PublishedTotalSize }, weight_map: weightMap }));
  return folder;
}
