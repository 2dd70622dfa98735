import path from "node:path";
import { describe, expect, it } from "vitest";
import { DomainError } from "../errors/domain-error.js";
import { tinyModelGguf, writeGgufFile } from "../engines/llama/tiny-gguf.js";
import { demandBytesPerCard } from "../placement/index.js";
import { readModelSource } from "../plan/read-model-source.js";
import { temporaryDirectory } from "../../test/support/temporary-directory.js";
import { checkGgufFile, demoGgufMaxContext, ggufModelEntry, ggufModelName } from "./gguf-model.js";

const GiB = 1024 ** 3;

describe("the model the demo adds for --gguf", () => {
  it("is named after the file, as a catalog name", () => {
    expect(ggufModelName("/models/Qwen2.5-0.5B-Instruct-Q4_K_M.gguf")).toBe("qwen2.5-0.5b-instruct-q4_k_m");
    expect(ggufModelName("/m/My Model (v2).GGUF")).toBe("my-model-v2");
    expect(ggufModelName("/m/__.gguf")).toBe("gguf-model");
  });

  it("runs on the CPU with one slot at the file's trained context, reserving what the planner says it needs", async () => {
    const file = path.join(temporaryDirectory("llmgw-gguf-model-"), "tiny.gguf");
    await writeGgufFile(file, tinyModelGguf());
    const facts = await readModelSource(file);
    const entry = ggufModelEntry(facts, file, 2);
    expect(entry).toMatchObject({ name: "tiny", context: Math.min(facts.architecture.trainedContext, demoGgufMaxContext) });
    expect(entry.profiles).toEqual([{ name: "cpu", engine: "llamacpp", source: file, memory_gb: expect.any(Number), cpu_cores: 2, slots: 1 }]);
    // What one llama.cpp replica needs by the planner (weights, runtime, KV cache), rounded up to a quarter GiB.
    const planned = demandBytesPerCard(facts, { engine: "llamacpp", gpus: 1, quantization: facts.ggufFileType, slots: 1 }, entry.context) ?? Number.NaN;
    const reserved = (entry.profiles?.[0]?.memory_gb ?? 0) * GiB;
    expect(reserved).toBeGreaterThanOrEqual(planned);
    expect(reserved - planned).toBeLessThan(GiB / 4);
  });

  it("is refused before the demo starts when the path is missing, a folder, or not a GGUF", async () => {
    const folder = temporaryDirectory("llmgw-gguf-check-");
    const refusal = async (file: string) => (await checkGgufFile(file).then(() => undefined, (error: unknown) => error)) as DomainError;
    const missing = await refusal(path.join(folder, "nope.gguf"));
    expect(missing).toBeInstanceOf(DomainError);
    expect(missing.message).toMatch(/^--gguf .*nope\.gguf: cannot read it: .*ENOENT/);
    expect(missing.hint).toContain("nothing was started");
    expect((await refusal(folder)).message).toContain("cannot read it: is a folder");
  });
});
