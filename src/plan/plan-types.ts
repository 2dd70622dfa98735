import type { EngineKind } from "./memory.js";

/** The stable JSON shape of `ctl model plan --json` and GET /api/v1/plan (docs/PLAN.md). */
export interface Plan {
  readonly source: string;
  readonly architecture: PlanArchitecture;
  readonly gpu_memory_utilization: number;
  /** The --context asked for; absent when none was. */
  readonly requested_context?: number;
  readonly candidates: readonly PlanCandidate[];
}

export interface PlanArchitecture {
  readonly model_type: string;
  readonly layers: number;
  readonly attention_heads: number;
  readonly kv_heads: number;
  readonly head_dim: number;
  readonly hidden_size: number;
  readonly vocab_size: number;
  readonly trained_context: number;
  readonly parameters: number;
  /** KV cache bytes per token for the whole model at 16-bit (sliding layers uncapped). */
  readonly kv_bytes_per_token: number;
  readonly checkpoint_dtype: string;
  readonly checkpoint_bytes: number;
  /** What the parameter count was read from: shard headers, GGUF tensor infos, or the index alone when the shards are not there. */
  readonly parameters_from: string;
  readonly experts?: number;
  readonly experts_per_token?: number;
  readonly sliding_window?: { readonly window: number; readonly sliding_layers: number };
  readonly mla?: { readonly kv_lora_rank: number; readonly qk_rope_head_dim: number };
}

export interface PlanPool {
  /** GPU class, or "cpu" for host memory. */
  readonly gpu_class: string;
  readonly fabric: string;
  /** For a CPU pool: the number of hosts with this much memory. */
  readonly cards_free: number;
  readonly cards_total: number;
  /** For a CPU pool: the host's memory. */
  readonly card_memory_bytes: number;
}

export interface PlanCandidate {
  readonly pool: PlanPool;
  readonly engine: EngineKind;
  readonly quantization: string;
  /** Cards per node; 0 for a CPU candidate. A replica holds nodes × gpus cards. */
  readonly gpus: number;
  /** Nodes one replica spans (1 unless the model is split over several nodes of one fabric). */
  readonly nodes: number;
  /** How a replica over several nodes divides the model: tensor ranks per layer, pipeline stages (vLLM: one per node). */
  readonly parallel?: { readonly tensor: number; readonly pipeline: number };
  readonly weights_bytes_per_card: number;
  /** KV cache bytes per token on the busiest card (heads split, replication included). */
  readonly kv_bytes_per_token: number;
  readonly overhead_bytes_per_card: number;
  readonly usable_bytes_per_card: number;
  /** Largest single-sequence context that fits, capped at the trained context; 0 when the weights alone do not fit. */
  readonly max_context: number;
  readonly fits: boolean;
  /** What is short and by how much, for every reason the candidate misses. */
  readonly short?: readonly string[];
  /**
   * Set when the candidate needs weights in another format than the source's:
   * a GGUF file for llama.cpp, or an int8/int4 (AWQ, GPTQ) checkpoint for
   * vLLM, which cannot quantise 16-bit weights to those as it loads (fp8 it can).
   */
  readonly requires?: string;
}

export interface PlanOptions {
  readonly context?: number;
  readonly gpuMemoryUtilization?: number;
  /**
   * Nodes per replica to plan for. Without it, one node; and, for a pool
   * where no single node can hold the model, the fewest nodes that can.
   */
  readonly nodes?: number;
}
