import { gguf } from "@huggingface/gguf";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { adapterRefusal, readAdapter } from "../../plan/read-adapter.js";
import { readModelSource } from "../../plan/read-model-source.js";
import { tinyLoraGguf, tinyModelGguf, tinyModelShape, tinyVocabulary, writeGgufFile } from "./tiny-gguf.js";

const directory = mkdtempSync(path.join(tmpdir(), "llmgw-tiny-gguf-"));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

describe("the tiny llama GGUF and its adapters", () => {
  it("writes the same bytes for the same seed, and others for another", () => {
    expect(tinyModelGguf().equals(tinyModelGguf())).toBe(true);
    expect(tinyModelGguf({ seed: 1 }).equals(tinyModelGguf())).toBe(false);
  });

  it("reads as a llama model through the planner's own reader, with its shape and exact tensor bytes", async () => {
    const bytes = tinyModelGguf();
    const file = await writeGgufFile(path.join(directory, "tiny.gguf"), bytes);
    const facts = await readModelSource(file);
    expect(facts.architecture).toMatchObject({
      modelType: "llama",
      layers: tinyModelShape.layers,
      hiddenSize: tinyModelShape.embedding,
      attentionHeads: tinyModelShape.heads,
      kvHeads: tinyModelShape.kvHeads,
      vocabSize: tinyVocabulary().tokens.length,
      trainedContext: tinyModelShape.contextLength,
    });
    expect(facts.checkpoint.format).toBe("gguf");
    // Every tensor is f32 and the header comes first: the file is the tensors' bytes and a header.
    expect(facts.checkpoint.bytes).toBeLessThan(bytes.length);
    expect(facts.checkpoint.bytes).toBe(facts.parameters * 4);
  });

  it("carries a byte-level vocabulary and a chat template that llama.cpp reads", async () => {
    const file = await writeGgufFile(path.join(directory, "tiny.gguf"), tinyModelGguf());
    const { metadata } = await gguf(file, { allowLocalFile: true });
    const fields = metadata as unknown as Record<string, unknown>;
    expect(fields["tokenizer.ggml.model"]).toBe("gpt2");
    expect((fields["tokenizer.ggml.tokens"] as string[]).slice(0, 256)).toHaveLength(256);
    expect(fields["tokenizer.chat_template"]).toContain("<|im_start|>");
  });

  it("gives an adapter the adapter check accepts for llama and refuses for another architecture", async () => {
    const own = await writeGgufFile(path.join(directory, "lora.gguf"), tinyLoraGguf());
    const other = await writeGgufFile(path.join(directory, "qwen2-lora.gguf"), tinyLoraGguf({ architecture: "qwen2" }));
    const base = { model: "tiny", engine: "llamacpp", modelType: "llama", maxLoraRank: 16 } as const;
    expect(adapterRefusal(own, await readAdapter(own), base)).toBeUndefined();
    expect(adapterRefusal(other, await readAdapter(other), base)?.message).toContain("is a LoRA for qwen2, but tiny is a llama model");
  });
});
