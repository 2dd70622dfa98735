import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ggufHeaderBytes, syntheticGguf, writeBytes } from "./header-only-checkpoint.js";
import { adapterRefusal, defaultMaxLoraRank, readAdapter, type AdapterBase } from "./read-adapter.js";
import { fixtureArchitecture } from "./testing/fixtures.js";
import { startHubServer, type HubServer } from "../hub/local-hub.js";

let workspace: string;
let server: HubServer;

/** The header llama.cpp's convert_lora_to_gguf.py writes: an adapter, of type lora, for one architecture. */
function loraGguf(architecture: string): Uint8Array {
  return ggufHeaderBytes({ "general.architecture": architecture, "general.type": "adapter", "adapter.type": "lora", "adapter.lora.alpha": { float: 32 } }, [
    { name: "blk.0.attn_q.weight.lora_a", dimensions: [4096, 16], type: "F16" },
    { name: "blk.0.attn_q.weight.lora_b", dimensions: [16, 4096], type: "F16" },
  ]);
}

async function peftFolder(name: string, config: Record<string, unknown>): Promise<string> {
  const folder = join(workspace, name);
  await mkdir(folder, { recursive: true });
  await writeFile(join(folder, "adapter_config.json"), JSON.stringify(config));
  return folder;
}

const llamaOnLlamaCpp: AdapterBase = { model: "llama-3.1-8b-cpu", engine: "llamacpp", modelType: "llama", maxLoraRank: defaultMaxLoraRank };
const qwenOnVllm: AdapterBase = { model: "qwen2.5-7b", engine: "vllm", modelType: "qwen2", maxLoraRank: defaultMaxLoraRank };

beforeAll(async () => {
  workspace = await mkdtemp(join(tmpdir(), "llmgw-adapter-"));
  await writeBytes(join(workspace, "llama-sql-lora.gguf"), loraGguf("llama"));
  await writeBytes(join(workspace, "qwen2-sql-lora.gguf"), loraGguf("qwen2"));
  await writeBytes(join(workspace, "llama-3.1-8b-Q4_K_M.gguf"), syntheticGguf(fixtureArchitecture("Llama-3.1-8B"), "Q4_K_M", 15));
  await peftFolder("qwen-sql", { peft_type: "LORA", r: 8, base_model_name_or_path: "Qwen/Qwen2.5-7B-Instruct", target_modules: ["q_proj", "v_proj"] });
  await peftFolder("qwen-wide", { peft_type: "LORA", r: 64, base_model_name_or_path: "Qwen/Qwen2.5-7B-Instruct" });
  await peftFolder("qwen-ia3", { peft_type: "IA3", base_model_name_or_path: "Qwen/Qwen2.5-7B-Instruct" });
  server = await startHubServer({ repositories: {}, mirrorRoot: workspace, token: "mirror-token", basicLogin: "robot:s3cret" });
});

afterAll(async () => {
  await server.close();
  await rm(workspace, { recursive: true, force: true });
});

describe("a GGUF LoRA for llama.cpp", () => {
  it("attaches to a base of its architecture", async () => {
    const adapter = await readAdapter(join(workspace, "llama-sql-lora.gguf"));
    expect(adapter).toMatchObject({ format: "gguf-lora", modelType: "llama" });
    expect(adapterRefusal("llama-sql-lora.gguf", adapter, llamaOnLlamaCpp)).toBeUndefined();
  });

  it("is refused for a base of another architecture, naming both", async () => {
    const adapter = await readAdapter(join(workspace, "qwen2-sql-lora.gguf"));
    expect(adapterRefusal("qwen2-sql-lora.gguf", adapter, llamaOnLlamaCpp)).toMatchObject({
      code: "adapter_invalid",
      message: expect.stringContaining("is a LoRA for qwen2, but llama-3.1-8b-cpu is a llama model"),
    });
  });

  it("refuses a GGUF that is a model, not a LoRA", async () => {
    await expect(readAdapter(join(workspace, "llama-3.1-8b-Q4_K_M.gguf"))).rejects.toMatchObject({
      code: "adapter_invalid",
      message: expect.stringContaining("not a LoRA adapter"),
      hint: expect.stringContaining("convert_lora_to_gguf.py"),
    });
  });

  it("refuses a file that is not GGUF at all, and a path that does not exist", async () => {
    await writeFile(join(workspace, "notes.gguf"), "not a gguf file");
    await expect(readAdapter(join(workspace, "notes.gguf"))).rejects.toMatchObject({ code: "adapter_invalid", message: expect.stringContaining("not a readable GGUF") });
    await expect(readAdapter(join(workspace, "missing.gguf"))).rejects.toMatchObject({ code: "adapter_invalid", message: expect.stringContaining("no such file") });
  });

  it("is read by URL from a mirror", async () => {
    const adapter = await readAdapter(`${server.url.replace("http://", "http://robot:s3cret@")}/mirror/llama-sql-lora.gguf`);
    expect(adapter).toMatchObject({ format: "gguf-lora", modelType: "llama" });
  });

  it("is refused for a vLLM base, which takes PEFT", async () => {
    const adapter = await readAdapter(join(workspace, "llama-sql-lora.gguf"));
    expect(adapterRefusal("llama-sql-lora.gguf", adapter, qwenOnVllm)?.message).toContain("runs on vllm, which takes a PEFT folder");
  });
});

describe("a PEFT folder for vLLM and SGLang", () => {
  it("attaches when its rank is within the engine's maximum", async () => {
    const adapter = await readAdapter(join(workspace, "qwen-sql"));
    expect(adapter).toEqual({ format: "peft", rank: 8, baseModel: "Qwen/Qwen2.5-7B-Instruct", targetModules: ["q_proj", "v_proj"] });
    expect(adapterRefusal("qwen-sql", adapter, qwenOnVllm)).toBeUndefined();
  });

  it("refuses a rank above the engine's maximum, and says which flag raises it", async () => {
    const adapter = await readAdapter(join(workspace, "qwen-wide"));
    expect(adapterRefusal("qwen-wide", adapter, qwenOnVllm)).toMatchObject({
      message: expect.stringContaining("has rank 64, above the 16"),
      hint: expect.stringContaining("--max-lora-rank 64"),
    });
    expect(adapterRefusal("qwen-wide", adapter, { ...qwenOnVllm, maxLoraRank: 64 })).toBeUndefined();
  });

  it("refuses a PEFT adapter that is not LoRA, and a folder without adapter_config.json", async () => {
    await expect(readAdapter(join(workspace, "qwen-ia3"))).rejects.toMatchObject({ message: expect.stringContaining("PEFT IA3 adapter, not LoRA") });
    await mkdir(join(workspace, "empty"), { recursive: true });
    await expect(readAdapter(join(workspace, "empty"))).rejects.toMatchObject({ message: expect.stringContaining("has no adapter_config.json") });
  });

  it("is read from a mirror folder URL", async () => {
    const adapter = await readAdapter(`${server.url.replace("http://", "http://robot:s3cret@")}/mirror/qwen-sql/`);
    expect(adapter).toMatchObject({ format: "peft", rank: 8 });
  });

  it("is refused for a llama.cpp base, which takes a GGUF LoRA", async () => {
    const adapter = await readAdapter(join(workspace, "qwen-sql"));
    expect(adapterRefusal("qwen-sql", adapter, llamaOnLlamaCpp)?.hint).toContain("convert_lora_to_gguf.py");
  });
});
