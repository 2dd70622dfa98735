import type { Architecture } from "./architecture.js";
import type { GpuEngineQuantization } from "./weights.js";

/** Everything the planner knows about one model, and where each fact came from. */
export interface ModelFacts {
  /** The source as given: "Qwen/Qwen2.5-7B-Instruct@main", a URL, a folder or a .gguf path. */
  readonly source: string;
  readonly architecture: Architecture;
  /** Counted from the weights' own metadata (safetensors shapes, index total_size, GGUF tensor shapes). */
  readonly parameters: number;
  readonly checkpoint: CheckpointFacts;
  /** For a GGUF source, its file type ("Q4_K_M"); undefined for safetensors. */
  readonly ggufFileType: string | undefined;
  readonly provenance: Provenance;
}

export interface CheckpointFacts {
  readonly format: "safetensors" | "gguf";
  /** The dtype most bytes are stored in: "BF16", "F16", "F32", "F8_E4M3", or a GGUF file type. */
  readonly dtype: string;
  /** Bytes of all tensors, exactly as stored. */
  readonly bytes: number;
  /**
   * Set when config.json declares a quantization_config (an AWQ, GPTQ or FP8
   * checkpoint): vLLM can only run it as that, at its stored size.
   */
  readonly quantization: GpuEngineQuantization | undefined;
}

export interface Provenance {
  /** e.g. "config.json of Qwen/Qwen2.5-7B-Instruct@main via https://huggingface.co". */
  readonly architecture: string;
  /** e.g. "headers of 4 shards listed in model.safetensors.index.json". */
  readonly parameters: string;
}
