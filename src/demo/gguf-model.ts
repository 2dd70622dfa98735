import { open } from "node:fs/promises";
import path from "node:path";
import type { ModelEntry } from "../catalog/index.js";
import { DomainError } from "../errors/light.js";
import { demandBytesPerCard } from "../placement/index.js";
import type { ModelFacts } from "../plan/index.js";

const GiB = 1024 ** 3;

/** The context the demo gives a GGUF model: its trained one, up to this, so a laptop holds its KV cache. */
export const demoGgufMaxContext = 4096;

/**
 * Checks that `file` is a GGUF before the demo starts anything: a typo or a
 * safetensors file must be said at once, not as a replica that fails a
 * minute later on the CPU node.
 */
export async function checkGgufFile(file: string): Promise<string> {
  const absolute = path.resolve(file);
  let magic: string;
  try {
    const handle = await open(absolute, "r");
    try {
      const { buffer, bytesRead } = await handle.read(Buffer.alloc(4), 0, 4, 0);
      magic = buffer.subarray(0, bytesRead).toString("latin1");
    } finally {
      await handle.close();
    }
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === "EISDIR" ? "is a folder" : (error as Error).message;
    throw new DomainError("source_unreadable", `--gguf ${file}: cannot read it: ${reason}`, "Give the path of a .gguf file you have, for example `llmgw demo --gguf ~/models/qwen2.5-0.5b-instruct-q4_k_m.gguf`; nothing was started.");
  }
  if (magic !== "GGUF") {
    throw new DomainError(
      "source_unreadable",
      `--gguf ${file}: not a GGUF file (it does not start with "GGUF")`,
      "llama.cpp runs GGUF files only: download one (a Q4_K_M of a small model runs well on a CPU) or convert the checkpoint with llama.cpp's convert_hf_to_gguf.py; nothing was started.",
    );
  }
  return absolute;
}

/** A catalog name from the file's name: "Qwen2.5-0.5B-Instruct-Q4_K_M.gguf" → "qwen2.5-0.5b-instruct-q4_k_m". */
export function ggufModelName(file: string): string {
  const stem = path
    .basename(file)
    .replace(/\.gguf$/i, "")
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, "-")
    .replace(/^[^a-z0-9]+/, "")
    .slice(0, 64)
    .replace(/[-._]+$/, "");
  return stem === "" ? "gguf-model" : stem;
}

/**
 * The catalog entry the demo adds for a GGUF the user has: one llamacpp
 * profile on the CPU, one slot at its trained context (up to
 * demoGgufMaxContext), reserving the host memory the planner says one
 * llama.cpp replica needs (weights, runtime, KV cache), rounded up to a
 * quarter GiB, and `cores` cores. Pure.
 */
export function ggufModelEntry(facts: ModelFacts, file: string, cores: number, name = ggufModelName(file)): ModelEntry {
  const context = Math.min(facts.architecture.trainedContext, demoGgufMaxContext);
  const profile = { engine: "llamacpp" as const, gpus: 1, quantization: facts.ggufFileType, slots: 1 };
  const planned = demandBytesPerCard(facts, profile, context) ?? facts.checkpoint.bytes;
  return {
    name,
    context,
    profiles: [{ name: "cpu", engine: "llamacpp", source: file, memory_gb: Math.max(0.25, Math.ceil((planned / GiB) * 4) / 4), cpu_cores: cores, slots: 1 }],
  };
}
