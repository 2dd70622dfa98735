import { mkdir, open } from "node:fs/promises";
import path from "node:path";
import { architectureFromConfig, checkpointTensors, syntheticGgufParts, writeBytes, writeSyntheticCheckpoint, type GgufQuantization } from "../plan/index.js";
import {
  llama31_8bConfig,
  llama33_70bConfig,
  nomicEmbedTextV15Config,
  qwen25_05bConfig,
  qwen25_14bConfig,
  qwen25_7bConfig,
  qwen3Embedding06bConfig,
  qwen3Reranker06bConfig,
} from "./demo-configs.js";
import { deepseekV3Config, deepseekV3Repository, deepseekV3Shards, writeDeepSeekV3Checkpoint } from "./deepseek-v3-checkpoint.js";

/**
 * A Hugging Face repository a preset names, as the demo's stand-in hub
 * serves it: the publisher's own config.json and file layout (shard count,
 * GGUF file names and parts) with header-only weights, so the planner reads
 * the real architecture and counts the real parameters without a download.
 */
export interface PresetCheckpoint {
  /** "Org/Name" as on the hub. */
  readonly repository: string;
  readonly config: unknown;
  /** Safetensors shards, as the publisher split them (1: one model.safetensors). */
  readonly shards?: number;
  /** A GGUF file instead: its name without `.gguf` (and without the `-0000i-of-0000n` of a split one). */
  readonly gguf?: {
    readonly stem: string;
    readonly quantization: GgufQuantization;
    readonly fileType: number;
    readonly parts: number;
    /** The published file's exact size in bytes, where it is known: the planner's count of the stand-in is held to it. */
    readonly publishedBytes?: number;
  };
  /** Writes the checkpoint in its publisher's own format (FP8 with block scales), where BF16 headers would misstate it. */
  readonly write?: (folder: string) => Promise<unknown>;
}

// llama.cpp's file types (general.file_type): 7 is MOSTLY_Q8_0, 15 MOSTLY_Q4_K_M.
export const presetCheckpoints: readonly PresetCheckpoint[] = [
  { repository: "Qwen/Qwen2.5-7B-Instruct", config: qwen25_7bConfig, shards: 4 },
  { repository: "Qwen/Qwen2.5-7B-Instruct-GGUF", config: qwen25_7bConfig, gguf: { stem: "qwen2.5-7b-instruct-q4_k_m", quantization: "Q4_K_M", fileType: 15, parts: 2 } },
  { repository: "Qwen/Qwen2.5-14B-Instruct", config: qwen25_14bConfig, shards: 8 },
  { repository: "Qwen/Qwen2.5-14B-Instruct-GGUF", config: qwen25_14bConfig, gguf: { stem: "qwen2.5-14b-instruct-q4_k_m", quantization: "Q4_K_M", fileType: 15, parts: 3 } },
  { repository: "meta-llama/Llama-3.1-8B", config: llama31_8bConfig, shards: 4 },
  { repository: "meta-llama/Llama-3.3-70B-Instruct", config: llama33_70bConfig, shards: 30 },
  { repository: "Qwen/Qwen2.5-0.5B-Instruct-GGUF", config: qwen25_05bConfig, gguf: { stem: "qwen2.5-0.5b-instruct-q4_k_m", quantization: "Q4_K_M", fileType: 15, parts: 1 } },
  { repository: "Qwen/Qwen3-Embedding-0.6B", config: qwen3Embedding06bConfig, shards: 1 },
  { repository: "Qwen/Qwen3-Embedding-0.6B-GGUF", config: qwen3Embedding06bConfig, gguf: { stem: "Qwen3-Embedding-0.6B-Q8_0", quantization: "Q8_0", fileType: 7, parts: 1 } },
  { repository: "Qwen/Qwen3-Reranker-0.6B", config: qwen3Reranker06bConfig, shards: 1 },
  // 84,106,624 bytes: the size the hub lists at revision 0188c9bf409793f810680a5a431e7b899c46104c, with sha256
  // d4e388894e09cf3816e8b0896d81d265b55e7a9fff9ab03fe8bf4ef5e11295ac, as download manifests that check both record it.
  {
    repository: "nomic-ai/nomic-embed-text-v1.5-GGUF",
    config: nomicEmbedTextV15Config,
    gguf: { stem: "nomic-embed-text-v1.5.Q4_K_M", quantization: "Q4_K_M", fileType: 15, parts: 1, publishedBytes: 84_106_624 },
  },
  { repository: deepseekV3Repository, config: deepseekV3Config, shards: deepseekV3Shards, write: writeDeepSeekV3Checkpoint },
];

/**
 * A file a ComfyUI preset's workflow loads, as the hub lists it: its
 * repository, its path there, and its size as published (the hub shows
 * three digits, so these are the listed gigabytes). The demo's agents
 * pretend their fetches, so only the size is ever read: the file is written
 * sparse, taking no disk, and the source check's HEAD reads its length.
 */
export interface PresetComfyFile {
  readonly repository: string;
  readonly path: string;
  readonly bytes: number;
}

export const presetComfyFiles: readonly PresetComfyFile[] = [
  { repository: "Comfy-Org/flux1-schnell", path: "flux1-schnell-fp8.safetensors", bytes: 17.2e9 },
  { repository: "tencent/Hunyuan3D-2", path: "hunyuan3d-dit-v2-0/model.fp16.safetensors", bytes: 4.93e9 },
];

/** The file names a GGUF checkpoint is published under: one file, or `stem-00001-of-0000n.gguf` and the rest. */
export function ggufFileNames(gguf: NonNullable<PresetCheckpoint["gguf"]>): string[] {
  if (gguf.parts === 1) return [`${gguf.stem}.gguf`];
  const count = String(gguf.parts).padStart(5, "0");
  return Array.from({ length: gguf.parts }, (_, part) => `${gguf.stem}-${String(part + 1).padStart(5, "0")}-of-${count}.gguf`);
}

/**
 * Writes every preset checkpoint and ComfyUI file under `root/Org/Name/` and returns the
 * repositories for the stand-in hub ("Org/Name" → folder).
 */
export async function writePresetCheckpoints(root: string): Promise<Record<string, string>> {
  const repositories: Record<string, string> = {};
  for (const checkpoint of presetCheckpoints) {
    const folder = path.join(root, ...checkpoint.repository.split("/"));
    const architecture = architectureFromConfig(checkpoint.config, `${checkpoint.repository}/config.json`);
    if (checkpoint.write) {
      await checkpoint.write(folder);
    } else if (checkpoint.gguf) {
      const parts = syntheticGgufParts(architecture, checkpoint.gguf.quantization, checkpoint.gguf.fileType, checkpoint.gguf.parts);
      const names = ggufFileNames(checkpoint.gguf);
      for (const [index, bytes] of parts.entries()) await writeBytes(path.join(folder, names[index] as string), bytes);
    } else {
      await writeSyntheticCheckpoint(folder, checkpoint.config, checkpointTensors(architecture), checkpoint.shards ?? 1);
    }
    repositories[checkpoint.repository] = folder;
  }
  for (const file of presetComfyFiles) {
    const folder = path.join(root, ...file.repository.split("/"));
    const target = path.join(folder, ...file.path.split("/"));
    await mkdir(path.dirname(target), { recursive: true });
    const handle = await open(target, "w");
    try {
      await handle.truncate(file.bytes);
    } finally {
      await handle.close();
    }
    repositories[file.repository] = folder;
  }
  return repositories;
}
