import { describe, expect, it } from "vitest";
import { parseHardwareSpec } from "../fleet/hardware-spec.js";
import { fleetFromHardwareSpec } from "../fleet/pools.js";
import { planCandidates } from "../plan/candidates.js";
import { kvCacheBytesPerCard } from "../plan/kv-cache.js";
import { fixtureFacts } from "../plan/testing/fixtures.js";
import { demandBytesPerCard } from "./demand-bytes-per-card.js";

const fleet = (spec: string) => fleetFromHardwareSpec(parseHardwareSpec(spec));

describe("demandBytesPerCard", () => {
  const facts = fixtureFacts("Llama-3.3-70B-Instruct");
  const candidate = planCandidates(facts, fleet("2xH100-80GB@nvl0")).candidates.find(
    (each) => each.engine === "vllm" && each.quantization === "bf16" && each.gpus === 2,
  );
  const profile = { engine: "vllm" as const, gpus: 2, quantization: "bf16", slots: 1 };

  it("charges the plan candidate's weights and overhead, plus the KV cache at the context", () => {
    if (!candidate) throw new Error("the plan has no vllm bf16 2-card candidate");
    const context = 16384;
    const kv = kvCacheBytesPerCard(facts.architecture, context, 2, "tensor_parallel");
    const bytes = demandBytesPerCard(facts, profile, context) ?? 0;
    expect(bytes - kv).toBeCloseTo(candidate.weights_bytes_per_card + candidate.overhead_bytes_per_card, -1);
  });

  it("fits a card exactly up to the largest context the plan shows", () => {
    if (!candidate) throw new Error("the plan has no vllm bf16 2-card candidate");
    expect(candidate.max_context).toBeLessThan(facts.architecture.trainedContext);
    expect(demandBytesPerCard(facts, profile, candidate.max_context)).toBeLessThanOrEqual(candidate.usable_bytes_per_card);
    expect(demandBytesPerCard(facts, profile, candidate.max_context + 1)).toBeGreaterThan(candidate.usable_bytes_per_card);
  });

  it("without a context, needs the trained context as vLLM's default max-model-len does", () => {
    expect(demandBytesPerCard(facts, profile, undefined)).toBe(demandBytesPerCard(facts, profile, facts.architecture.trainedContext));
  });

  it("holds every llama.cpp slot's context at once", () => {
    const small = fixtureFacts("Qwen2.5-7B-Instruct");
    const llamacpp = { engine: "llamacpp" as const, gpus: 1, quantization: "Q4_K_M", slots: 4 };
    expect(demandBytesPerCard(small, llamacpp, 8192)).toBe(demandBytesPerCard(small, { ...llamacpp, slots: 1 }, 32768));
  });

  it("prices AWQ and GPTQ as the planner's int4", () => {
    const small = fixtureFacts("Qwen2.5-7B-Instruct");
    const int4 = demandBytesPerCard(small, { engine: "vllm", gpus: 1, quantization: "int4", slots: 1 }, 8192);
    expect(demandBytesPerCard(small, { engine: "vllm", gpus: 1, quantization: "awq", slots: 1 }, 8192)).toBe(int4);
    expect(demandBytesPerCard(small, { engine: "sglang", gpus: 1, quantization: "gptq", slots: 1 }, 8192)).toBe(int4);
  });

  it("has nothing to price for a CPU profile, ComfyUI or a quantisation it cannot tell", () => {
    const small = fixtureFacts("Qwen2.5-7B-Instruct");
    expect(demandBytesPerCard(small, { engine: "llamacpp", gpus: 0, quantization: "Q4_K_M", slots: 1 }, 8192)).toBeUndefined();
    expect(demandBytesPerCard(small, { engine: "comfyui", gpus: 1, quantization: undefined, slots: 1 }, undefined)).toBeUndefined();
    expect(demandBytesPerCard(small, { engine: "vllm", gpus: 1, quantization: "compressed-tensors", slots: 1 }, 8192)).toBeUndefined();
  });
});
