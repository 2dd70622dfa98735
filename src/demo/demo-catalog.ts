import type { ModelEntry } from "../catalog/schema.js";
import { llama31_8bConfig, llama33_70bConfig, qwen25_7bConfig } from "./demo-configs.js";

/** The demo's pretend machines, in the shorthand `llmgw agent --simulate` takes. */
export const demoNodes = [
  { name: "gpu-node-1", simulate: "2xH100-80GB@nvl0,cpu:32c/256g", describe: "2× H100 80 GB, 32 cores, 256 GiB" },
  { name: "gpu-node-2", simulate: "4xL40S-48GB@pcie,cpu:64c/512g", describe: "4× L40S 48 GB, 64 cores, 512 GiB" },
] as const;

/** A model folder the demo writes: a real config.json and header-only weights. */
export interface DemoCheckpoint {
  readonly folder: string;
  readonly config: unknown;
  /** Written as a GGUF file of this type instead of safetensors. */
  readonly gguf?: { readonly file: string; readonly quantization: "Q4_K_M"; readonly fileType: number };
}

export const demoCheckpoints: readonly DemoCheckpoint[] = [
  { folder: "Qwen2.5-7B-Instruct", config: qwen25_7bConfig },
  { folder: "Llama-3.1-8B", config: llama31_8bConfig },
  { folder: "Llama-3.3-70B-Instruct", config: llama33_70bConfig },
  // llama.cpp's file type 15 is MOSTLY_Q4_K_M.
  { folder: "Qwen2.5-7B-Instruct-GGUF", config: qwen25_7bConfig, gguf: { file: "qwen2.5-7b-instruct-q4_k_m.gguf", quantization: "Q4_K_M", fileType: 15 } },
];

/**
 * The demo's catalog, added at runtime (not declared) so that every ctl
 * command works on it, in an order where each fallback exists before the
 * model that names it. `models` is the folder the checkpoints were written to.
 */
export function demoModels(models: string): ModelEntry[] {
  return [
    {
      name: "qwen2.5-7b-instruct-cpu",
      context: 8192,
      owner: "demo",
      profiles: [
        { name: "cpu", engine: "llamacpp", source: `${models}/Qwen2.5-7B-Instruct-GGUF/qwen2.5-7b-instruct-q4_k_m.gguf`, quantization: "Q4_K_M", memory_gb: 8, cpu_cores: 8, slots: 4 },
      ],
    },
    {
      name: "qwen2.5-7b-instruct",
      origin: "hf://Qwen/Qwen2.5-7B-Instruct",
      context: 32768,
      max_output: 8192,
      scaling: { min: 1, max: 2 },
      owner: "demo",
      fallbacks: ["qwen2.5-7b-instruct-cpu"],
      profiles: [{ name: "h100", engine: "vllm", source: `${models}/Qwen2.5-7B-Instruct`, gpu_class: "h100", gpus: 1, quantization: "bf16" }],
    },
    {
      name: "llama-3.1-8b",
      origin: "hf://meta-llama/Llama-3.1-8B",
      context: 16384,
      owner: "demo",
      profiles: [{ name: "l40s", engine: "vllm", source: `${models}/Llama-3.1-8B`, gpu_class: "l40s", gpus: 1, quantization: "bf16" }],
    },
    {
      // On demand: listed, planned, not started (the reconciler places it when demand is reported).
      name: "llama-3.3-70b-instruct",
      origin: "hf://meta-llama/Llama-3.3-70B-Instruct",
      context: 16384,
      scaling: { min: 0, max: 1, idle_timeout: "10m" },
      owner: "demo",
      profiles: [{ name: "h100x2", engine: "vllm", source: `${models}/Llama-3.3-70B-Instruct`, gpu_class: "h100", gpus: 2, quantization: "bf16" }],
    },
  ];
}
