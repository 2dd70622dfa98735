import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseHardwareSpec } from "../fleet/hardware-spec.js";
import { fleetFromHardwareSpec } from "../fleet/pools.js";
import { planCandidates, type PlanCandidate } from "./candidates.js";
import { bytesNeededPerCard, maxContext, type ContextBudget } from "./memory.js";
import { fixtureArchitecture, fixtureFacts } from "./testing/fixtures.js";

const GiB = 1024 ** 3;
const fleet = (spec: string) => fleetFromHardwareSpec(parseHardwareSpec(spec));
const find = (candidates: readonly PlanCandidate[], engine: string, quantization: string, gpus: number) =>
  candidates.find((candidate) => candidate.engine === engine && candidate.quantization === quantization && candidate.gpus === gpus);

describe("planCandidates", () => {
  it("fits Llama-3.3-70B at bf16 on two 80 GB cards, at some context", () => {
    const plan = planCandidates(fixtureFacts("Llama-3.3-70B-Instruct"), fleet("2xH100-80GB@nvl0"));
    const candidate = find(plan.candidates, "vllm", "bf16", 2);
    expect(candidate?.fits).toBe(true);
    expect(candidate?.max_context).toBeGreaterThanOrEqual(8192);
    expect(candidate?.max_context).toBeLessThan(131072);
    expect(find(plan.candidates, "vllm", "bf16", 1)?.fits).toBe(false);
  });

  it("does not make an eight-card candidate from eight free cards over two fabrics", () => {
    const plan = planCandidates(fixtureFacts("Llama-3.1-8B"), fleet("4xH100-80GB@fabricA,4xH100-80GB@fabricB"));
    expect(plan.candidates.some((candidate) => candidate.gpus === 8)).toBe(false);
    expect(plan.candidates.some((candidate) => candidate.gpus === 4)).toBe(true);
  });

  it("does not make an eight-card candidate from two four-card nodes on one fabric either", () => {
    const plan = planCandidates(fixtureFacts("Llama-3.1-8B"), fleet("4xH100-80GB@nvl0,4xH100-80GB@nvl0"));
    expect(plan.candidates.some((candidate) => candidate.gpus === 8)).toBe(false);
  });

  it("lists tensor-parallel counts that do not split the heads as misses, with the reason", () => {
    const plan = planCandidates(fixtureFacts("Qwen2.5-7B-Instruct"), fleet("8xL40S-48GB@pcie"));
    const eight = find(plan.candidates, "vllm", "bf16", 8);
    expect(eight?.fits).toBe(false);
    expect(eight?.short).toContain("tensor parallel: 8 cards do not divide the 28 attention heads");
  });

  it("says what is short and by how much when the weights do not fit", () => {
    const plan = planCandidates(fixtureFacts("Qwen2.5-72B-Instruct"), fleet("1xA100-40GB@pcie"));
    const candidate = find(plan.candidates, "vllm", "bf16", 1);
    expect(candidate?.short?.[0]).toMatch(/^each card needs 135\.\d GiB for weights and \d+\.\d GiB runtime overhead, has 36\.0 GiB usable \(0\.90 of 40\.0 GiB\)/);
  });

  it("says how much KV cache a requested context lacks", () => {
    const plan = planCandidates(fixtureFacts("Llama-3.1-8B"), fleet("1xL4-24GB@pcie"), { context: 131072 });
    const candidate = find(plan.candidates, "vllm", "bf16", 1);
    expect(candidate?.fits).toBe(false);
    expect(candidate?.short?.[0]).toMatch(/^at 128k context each card needs 16\.0 GiB of KV cache, \d+\.\d GiB is left/);
  });

  it("refuses a context longer than the model was trained for", () => {
    const plan = planCandidates(fixtureFacts("Mistral-7B-v0.3"), fleet("1xH100-80GB@nvl0"), { context: 65536 });
    expect(plan.candidates.every((candidate) => !candidate.fits)).toBe(true);
    expect(find(plan.candidates, "vllm", "bf16", 1)?.short).toContain("the requested 64k context is longer than the 32k the model was trained for");
  });

  it("offers llama.cpp candidates on a CPU host", () => {
    const plan = planCandidates(fixtureFacts("Qwen2.5-7B-Instruct"), fleet("cpu:32c/64g"));
    const q4 = find(plan.candidates, "llamacpp", "Q4_K_M", 0);
    expect(q4?.fits).toBe(true);
    expect(q4?.pool.gpu_class).toBe("cpu");
    expect(plan.candidates.every((candidate) => candidate.engine === "llamacpp")).toBe(true);
  });

  it("counts a node's busy cards: no candidate wider than the most free cards on one node fits", () => {
    const facts = fixtureFacts("Llama-3.1-8B");
    const plan = planCandidates(facts, {
      pools: [{ cardClass: "h100", fabric: "nvl0", cardMemoryBytes: 80 * GiB, nodes: [{ name: "a", cardsTotal: 4, cardsFree: 1 }] }],
      cpuNodes: [],
    });
    const two = find(plan.candidates, "vllm", "bf16", 2);
    expect(two?.fits).toBe(false);
    expect(two?.short?.[0]).toBe("no node in the pool has 2 free cards (most free on one node: 1)");
  });

  it("orders fitting first, then fewest cards, then highest precision", () => {
    const plan = planCandidates(fixtureFacts("Llama-3.1-8B"), fleet("2xL4-24GB@pcie"), { context: 65536 });
    // bf16 on one card holds 41k tokens: the first fit on one card is an 8-bit one.
    expect(plan.candidates[0]).toMatchObject({ engine: "vllm", gpus: 1, fits: true });
    expect(["fp8", "int8"]).toContain(plan.candidates[0]?.quantization);
    // One card at 4 bits ranks above two cards at 16: fewer cards first.
    const bf16TwoCards = plan.candidates.findIndex((candidate) => candidate.engine === "vllm" && candidate.quantization === "bf16" && candidate.gpus === 2);
    const int4OneCard = plan.candidates.findIndex((candidate) => candidate.engine === "vllm" && candidate.quantization === "int4" && candidate.gpus === 1);
    expect(int4OneCard).toBeLessThan(bf16TwoCards);
    const fits = plan.candidates.map((candidate) => candidate.fits);
    expect(fits).toEqual([...fits].sort((a, b) => Number(b) - Number(a)));
    expect(fits).toContain(false);
    const fittingOneCard = plan.candidates.filter((candidate) => candidate.fits && candidate.gpus === 1).map((candidate) => candidate.quantization);
    expect(fittingOneCard.slice(0, 3).sort()).toEqual(["Q8_0", "fp8", "int8"]);
    expect(fittingOneCard.at(-1)).toBe("IQ4_XS");
  });

  it("describes the architecture in the documented shape", () => {
    const plan = planCandidates(fixtureFacts("Qwen3-30B-A3B"), fleet("1xH100-80GB@nvl0"));
    expect(plan.architecture).toMatchObject({
      layers: 48,
      attention_heads: 32,
      kv_heads: 4,
      head_dim: 128,
      hidden_size: 2048,
      trained_context: 40960,
      parameters: 30_532_122_624,
      experts: 128,
    });
  });
});

describe("properties", () => {
  const models = ["Llama-3.1-8B", "Llama-3.3-70B-Instruct", "Qwen2.5-7B-Instruct", "gemma-2-9b-it", "DeepSeek-V2-Lite", "Mixtral-8x7B-v0.1"];
  const cardSizes = [16, 24, 40, 48, 80, 96, 141];

  it("more usable memory never turns a fit into a miss", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...models),
        fc.constantFrom(...cardSizes),
        fc.double({ min: 0.5, max: 0.95, noNaN: true }),
        fc.double({ min: 0.001, max: 0.05, noNaN: true }),
        fc.integer({ min: 1, max: 131072 }),
        (model, cardGB, utilization, extra, context) => {
          const facts = fixtureFacts(model);
          const hardware = fleet(`4xH100-${cardGB}GB@nvl0`);
          const lower = planCandidates(facts, hardware, { context, gpuMemoryUtilization: utilization });
          const higher = planCandidates(facts, hardware, { context, gpuMemoryUtilization: utilization + extra });
          for (const candidate of lower.candidates) {
            if (!candidate.fits) continue;
            const same = higher.candidates.find(
              (other) => other.engine === candidate.engine && other.quantization === candidate.quantization && other.gpus === candidate.gpus,
            );
            expect(same?.fits).toBe(true);
            expect(same?.max_context).toBeGreaterThanOrEqual(candidate.max_context);
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it("a longer context never needs less memory", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...models),
        fc.constantFrom(1, 2, 4, 8),
        fc.constantFrom<"tensor_parallel" | "layer_split">("tensor_parallel", "layer_split"),
        fc.integer({ min: 0, max: 200_000 }),
        fc.integer({ min: 0, max: 200_000 }),
        (model, cards, kvLayout, a, b) => {
          const budget: ContextBudget = {
            architecture: fixtureArchitecture(model),
            usableBytes: 80 * GiB,
            weightsBytesPerCard: 10 * GiB,
            overheadBytesPerCard: GiB,
            cards,
            kvLayout,
          };
          const [shorter, longer] = a <= b ? [a, b] : [b, a];
          expect(bytesNeededPerCard(budget, longer)).toBeGreaterThanOrEqual(bytesNeededPerCard(budget, shorter));
        },
      ),
      { numRuns: 200 },
    );
  });

  it("the largest context always fits and one more token does not (below the trained context)", () => {
    fc.assert(
      fc.property(fc.constantFrom(...models), fc.integer({ min: 12, max: 200 }), (model, usableGiB) => {
        const architecture = fixtureArchitecture(model);
        const budget: ContextBudget = {
          architecture,
          usableBytes: usableGiB * GiB,
          weightsBytesPerCard: 10 * GiB,
          overheadBytesPerCard: GiB,
          cards: 1,
          kvLayout: "tensor_parallel",
        };
        const context = maxContext(budget);
        expect(bytesNeededPerCard(budget, context)).toBeLessThanOrEqual(budget.usableBytes);
        if (context < architecture.trainedContext) expect(bytesNeededPerCard(budget, context + 1)).toBeGreaterThan(budget.usableBytes);
      }),
      { numRuns: 100 },
    );
  });
});

describe("what a candidate needs beyond its source", () => {
  it("says a 16-bit source needs an AWQ/GPTQ checkpoint for vLLM int4 and a GGUF file for llama.cpp, and nothing for bf16 or fp8", () => {
    const plan = planCandidates(fixtureFacts("Qwen2.5-7B-Instruct"), fleetFromHardwareSpec(parseHardwareSpec("1xH100-80GB")));
    const find = (engine: string, quantization: string) => plan.candidates.find((candidate) => candidate.engine === engine && candidate.quantization === quantization);
    expect(find("vllm", "int4")?.requires).toContain("an int4 checkpoint of this model (AWQ or GPTQ)");
    expect(find("llamacpp", "Q4_K_M")?.requires).toBe("a Q4_K_M GGUF file of this model (the source is safetensors)");
    expect(find("vllm", "bf16")?.requires).toBeUndefined();
    expect(find("vllm", "fp8")?.requires).toBeUndefined();
  });
});
