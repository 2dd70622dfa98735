import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { temporaryDirectory } from "../../test/support/temporary-directory.js";
import { buildCatalog } from "../catalog/build-catalog.js";
import { modelEntrySchema } from "../catalog/schema.js";
import { parseHardwareSpec } from "../fleet/hardware-spec.js";
import { fleetFromHardwareSpec } from "../fleet/pools.js";
import { planCandidates, type Plan } from "./candidates.js";
import { syntheticGguf, writeBytes } from "./header-only-checkpoint.js";
import { readModelSource } from "./read-model-source.js";
import { chooseServeEntry, defaultModelName } from "./serve-entry.js";
import { fixtureArchitecture, fixtureFacts } from "./testing/fixtures.js";

const GiB = 1024 ** 3;
const plan = (model: string, spec: string, context?: number): Plan =>
  planCandidates(fixtureFacts(model), fleetFromHardwareSpec(parseHardwareSpec(spec)), context !== undefined ? { context } : {});

/** The entry must be one the catalog takes as it is, the way `ctl model add` would send it. */
function expectValidEntry(entry: unknown): void {
  const parsed = modelEntrySchema.parse(entry);
  expect(() => buildCatalog([{ entry: parsed, source: "runtime", place: "serve" }])).not.toThrow();
}

describe("chooseServeEntry: the best fitting candidate as a model entry", () => {
  it("takes one 80 GB card at bf16 for a 7B model, with the largest context it holds", () => {
    const thePlan = plan("Qwen2.5-7B-Instruct", "2xH100-80GB@nvl0,cpu:16c/64g");
    const choice = chooseServeEntry(thePlan, { source: "hf://Qwen/Qwen2.5-7B-Instruct@main" });
    expect(choice.fits).toBe(true);
    if (!choice.fits) return;
    expect(choice.entry).toEqual({
      name: "qwen2.5-7b-instruct",
      context: thePlan.architecture.trained_context,
      profiles: [{ engine: "vllm", source: "hf://Qwen/Qwen2.5-7B-Instruct@main", gpu_class: "h100", gpus: 1, quantization: "bf16" }],
    });
    expectValidEntry(choice.entry);
  });

  it("splits a 70B model over two cards, keeps the context asked for, and takes name, class and on-demand", () => {
    const thePlan = plan("Llama-3.3-70B-Instruct", "2xH100-80GB@nvl0", 16384);
    const choice = chooseServeEntry(thePlan, { source: "/srv/models/Llama-3.3-70B-Instruct", name: "llama", context: 16384, class: "critical", onDemand: true });
    expect(choice).toMatchObject({
      fits: true,
      entry: { name: "llama", context: 16384, class: "critical", scaling: { min: 0 }, profiles: [{ engine: "vllm", gpu_class: "h100", gpus: 2, quantization: "bf16" }] },
    });
    if (choice.fits) expectValidEntry(choice.entry);
  });

  it("rounds the largest fitting context down to whole thousands", () => {
    const thePlan = plan("Llama-3.3-70B-Instruct", "2xH100-80GB@nvl0");
    const choice = chooseServeEntry(thePlan, { source: "/m/llama" });
    if (!choice.fits) throw new Error(choice.why);
    expect(choice.candidate.max_context % 1024).not.toBe(0);
    expect(choice.entry.context).toBe(Math.floor(choice.candidate.max_context / 1024) * 1024);
  });

  it("passes over candidates that need other files than the source, and says what would fit", () => {
    // 70B: only int4 (a GPTQ/AWQ checkpoint) or a GGUF would fit one 48 GB card.
    const thePlan = plan("Llama-3.3-70B-Instruct", "1xL40S-48GB,cpu:4c/16g");
    expect(thePlan.candidates.some((candidate) => candidate.fits)).toBe(true);
    const choice = chooseServeEntry(thePlan, { source: "/m/llama" });
    expect(choice.fits).toBe(false);
    if (!choice.fits) expect(choice.why).toMatch(/it would fit with an? .*(checkpoint|GGUF)/);
  });

  it("says nothing fits when no candidate does, and when no node has joined", () => {
    const tooSmall = chooseServeEntry(plan("Llama-3.3-70B-Instruct", "cpu:4c/16g"), { source: "/m/llama" });
    expect(tooSmall).toEqual({ fits: false, why: expect.stringContaining("no candidate fits") });
    const empty = chooseServeEntry(planCandidates(fixtureFacts("Llama-3.1-8B"), { pools: [], cpuNodes: [] }), { source: "/m/llama" });
    expect(empty).toEqual({ fits: false, why: expect.stringContaining("no nodes have joined") });
  });

  describe("a GGUF on a CPU host", () => {
    let folder: string;
    beforeAll(() => {
      folder = temporaryDirectory("llmgw-serve-entry-");
    });

    it("reserves the host memory the plan priced, weights and KV cache of its context included", async () => {
      const file = path.join(folder, "llama-3.1-8b-instruct-Q4_K_M.gguf");
      await writeBytes(file, syntheticGguf(fixtureArchitecture("Llama-3.1-8B"), "Q4_K_M", 15));
      const thePlan = planCandidates(await readModelSource(file), fleetFromHardwareSpec(parseHardwareSpec("cpu:16c/64g")), { context: 8192 });
      const choice = chooseServeEntry(thePlan, { source: file, context: 8192 });
      if (!choice.fits) throw new Error(choice.why);
      const profile = choice.entry.profiles?.[0];
      expect(profile).toMatchObject({ engine: "llamacpp", gpus: 0, quantization: "Q4_K_M" });
      const priced = choice.candidate.weights_bytes_per_card + choice.candidate.overhead_bytes_per_card + choice.candidate.kv_bytes_per_token * 8192;
      expect(profile?.memory_gb).toBe(Math.ceil(priced / GiB));
      expect(choice.entry.name).toBe("llama-3.1-8b-instruct-q4_k_m");
      expectValidEntry(choice.entry);
    });
  });
});

describe("defaultModelName", () => {
  it.each([
    ["Qwen/Qwen2.5-7B-Instruct", "qwen2.5-7b-instruct"],
    ["hf://Qwen/Qwen2.5-7B-Instruct@v1.0", "qwen2.5-7b-instruct"],
    ["hf://bartowski/Llama-3.3-70B-Instruct-GGUF@main/Llama-3.3-70B-Instruct-Q8_0-00001-of-00002.gguf", "llama-3.3-70b-instruct-gguf"],
    ["https://mirror.example/models/Mistral-7B-v0.3/", "mistral-7b-v0.3"],
    ["https://mirror.example/gguf/Phi-3-mini-4k-instruct-q4.gguf", "phi-3-mini-4k-instruct-q4"],
    ["https://mirror.example/gguf/Big-Model-Q8_0-00001-of-00003.gguf", "big-model-q8_0"],
    ["mirror:models/Gemma 2 9B/", "gemma-2-9b"],
    ["/srv/models/DeepSeek-V2-Lite", "deepseek-v2-lite"],
  ])("names %s %s", (source, name) => {
    expect(defaultModelName(source)).toBe(name);
    expect(modelEntrySchema.shape.name.safeParse(name).success).toBe(true);
  });
});
