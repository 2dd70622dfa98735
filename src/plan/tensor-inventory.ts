import type { Architecture } from "./architecture.js";

/**
 * The weight tensors an architecture implies, with the facts the arithmetic
 * needs about each: its role (which GGUF quantisation mix rule applies), its
 * row length (k-quants need rows that are a multiple of 256), and how tensor
 * parallelism splits it.
 *
 * Parameter counts always come from the checkpoint's own metadata; the
 * inventory only says how those parameters divide between roles, so a
 * quantisation can price embeddings, attention and experts differently.
 */
export type TensorRole =
  | "token_embd"
  | "output"
  | "attn_q"
  | "attn_k"
  | "attn_v"
  | "attn_output"
  | "attn_q_a"
  | "attn_q_b"
  | "attn_kv_a_mqa"
  | "attn_kv_b"
  | "ffn_gate"
  | "ffn_up"
  | "ffn_down"
  | "ffn_gate_exps"
  | "ffn_up_exps"
  | "ffn_down_exps"
  | "ffn_gate_shexp"
  | "ffn_up_shexp"
  | "ffn_down_shexp"
  | "ffn_gate_inp"
  | "norm"
  | "bias";

/**
 * How tensor parallelism places a tensor (vLLM's layers):
 * - sharded: split evenly across ranks (column/row parallel linears, and the
 *   vocab-parallel embedding and LM head);
 * - kv_heads: split by KV head, replicated once ranks outnumber KV heads;
 * - replicated: every rank holds all of it (norms, MoE routers, MLA latent projections).
 */
export type TensorSplit = "sharded" | "kv_heads" | "replicated";

export interface InventoryTensor {
  /** The transformers name, e.g. "model.layers.3.self_attn.k_proj.weight". */
  readonly name: string;
  readonly role: TensorRole;
  /** Decoder layer index; undefined for embeddings, output and the final norm. */
  readonly layer: number | undefined;
  /** transformers shape: [rows, row length], [experts, rows, row length] or [length]. */
  readonly shape: readonly number[];
  readonly split: TensorSplit;
}

export function tensorElements(tensor: InventoryTensor): number {
  return tensor.shape.reduce((product, dimension) => product * dimension, 1);
}

/** The length of one row (GGUF ne0): the last dimension. */
export function tensorRowLength(tensor: InventoryTensor): number {
  return tensor.shape[tensor.shape.length - 1] ?? 0;
}

export function isMatrix(tensor: InventoryTensor): boolean {
  return tensor.shape.length >= 2;
}

export function tensorInventory(architecture: Architecture): InventoryTensor[] {
  const { hiddenSize: hidden, headDim, attentionHeads: heads, kvHeads, vocabSize, layers } = architecture;
  const tensors: InventoryTensor[] = [];
  const add = (name: string, role: TensorRole, layer: number | undefined, shape: number[], split: TensorSplit): void => {
    tensors.push({ name, role, layer, shape, split });
  };

  add("model.embed_tokens.weight", "token_embd", undefined, [vocabSize, hidden], "sharded");
  for (let layer = 0; layer < layers; layer += 1) {
    const prefix = `model.layers.${layer}`;
    const attention = `${prefix}.self_attn`;
    const mla = architecture.mla;
    if (mla) {
      const qHeadDim = mla.qkNopeHeadDim + mla.qkRopeHeadDim;
      if (mla.qLoraRank !== undefined) {
        add(`${attention}.q_a_proj.weight`, "attn_q_a", layer, [mla.qLoraRank, hidden], "replicated");
        add(`${attention}.q_a_layernorm.weight`, "norm", layer, [mla.qLoraRank], "replicated");
        add(`${attention}.q_b_proj.weight`, "attn_q_b", layer, [heads * qHeadDim, mla.qLoraRank], "sharded");
      } else {
        add(`${attention}.q_proj.weight`, "attn_q", layer, [heads * qHeadDim, hidden], "sharded");
      }
      add(`${attention}.kv_a_proj_with_mqa.weight`, "attn_kv_a_mqa", layer, [mla.kvLoraRank + mla.qkRopeHeadDim, hidden], "replicated");
      add(`${attention}.kv_a_layernorm.weight`, "norm", layer, [mla.kvLoraRank], "replicated");
      add(`${attention}.kv_b_proj.weight`, "attn_kv_b", layer, [heads * (mla.qkNopeHeadDim + mla.vHeadDim), mla.kvLoraRank], "sharded");
      add(`${attention}.o_proj.weight`, "attn_output", layer, [hidden, heads * mla.vHeadDim], "sharded");
    } else {
      add(`${attention}.q_proj.weight`, "attn_q", layer, [heads * headDim, hidden], "sharded");
      add(`${attention}.k_proj.weight`, "attn_k", layer, [kvHeads * headDim, hidden], "kv_heads");
      add(`${attention}.v_proj.weight`, "attn_v", layer, [kvHeads * headDim, hidden], "kv_heads");
      add(`${attention}.o_proj.weight`, "attn_output", layer, [hidden, heads * headDim], "sharded");
      if (architecture.attentionBias) {
        add(`${attention}.q_proj.bias`, "bias", layer, [heads * headDim], "sharded");
        add(`${attention}.k_proj.bias`, "bias", layer, [kvHeads * headDim], "kv_heads");
        add(`${attention}.v_proj.bias`, "bias", layer, [kvHeads * headDim], "kv_heads");
      }
      if (architecture.qkNorm) {
        add(`${attention}.q_norm.weight`, "norm", layer, [headDim], "replicated");
        add(`${attention}.k_norm.weight`, "norm", layer, [headDim], "replicated");
      }
    }

    const moe = architecture.moe;
    if (moe && layer >= moe.denseLayers) {
      const mlp = `${prefix}.mlp`;
      add(`${mlp}.gate.weight`, "ffn_gate_inp", layer, [moe.experts, hidden], "replicated");
      add(`${mlp}.experts.gate_proj.weight`, "ffn_gate_exps", layer, [moe.experts, moe.expertIntermediateSize, hidden], "sharded");
      add(`${mlp}.experts.up_proj.weight`, "ffn_up_exps", layer, [moe.experts, moe.expertIntermediateSize, hidden], "sharded");
      add(`${mlp}.experts.down_proj.weight`, "ffn_down_exps", layer, [moe.experts, hidden, moe.expertIntermediateSize], "sharded");
      if (moe.sharedIntermediateSize > 0) {
        add(`${mlp}.shared_experts.gate_proj.weight`, "ffn_gate_shexp", layer, [moe.sharedIntermediateSize, hidden], "sharded");
        add(`${mlp}.shared_experts.up_proj.weight`, "ffn_up_shexp", layer, [moe.sharedIntermediateSize, hidden], "sharded");
        add(`${mlp}.shared_experts.down_proj.weight`, "ffn_down_shexp", layer, [hidden, moe.sharedIntermediateSize], "sharded");
      }
    } else {
      const width = architecture.intermediateSize ?? 0;
      add(`${prefix}.mlp.gate_proj.weight`, "ffn_gate", layer, [width, hidden], "sharded");
      add(`${prefix}.mlp.up_proj.weight`, "ffn_up", layer, [width, hidden], "sharded");
      add(`${prefix}.mlp.down_proj.weight`, "ffn_down", layer, [hidden, width], "sharded");
    }
    const normNames = ["input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm"];
    for (const normName of normNames.slice(0, architecture.normsPerLayer)) {
      add(`${prefix}.${normName}.weight`, "norm", layer, [hidden], "replicated");
    }
  }
  add("model.norm.weight", "norm", undefined, [hidden], "replicated");
  if (!architecture.tiedEmbeddings) add("lm_head.weight", "output", undefined, [vocabSize, hidden], "sharded");
  return tensors;
}

export function inventoryParameters(tensors: readonly InventoryTensor[]): number {
  return tensors.reduce((sum, tensor) => sum + tensorElements(tensor), 0);
}
