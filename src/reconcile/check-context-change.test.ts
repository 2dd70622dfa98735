import { describe, expect, it } from "vitest";
import { catalogModelOf as modelOf } from "../catalog/testing/catalog-model-of.js";
import { parseHardwareSpec } from "../fleet/hardware-spec.js";
import { fleetFromHardwareSpec } from "../fleet/pools.js";
import type { ModelFacts } from "../plan/model-facts.js";
import { fixtureFacts } from "../plan/testing/fixtures.js";
import { refusalOf } from "../../test/support/refusal.js";
import { checkContextChange } from "./check-context-change.js";

const qwen = fixtureFacts("Qwen2.5-7B-Instruct");
const llama70 = fixtureFacts("Llama-3.3-70B-Instruct");
const facts = new Map<string, ModelFacts>([
  ["/models/qwen", qwen],
  ["/models/qwen.gguf", qwen],
  ["/models/llama70", llama70],
]);
const fleet = fleetFromHardwareSpec(parseHardwareSpec("2xH100-80GB@nvl0,4xL40S-48GB@pcie"));

const chat = modelOf({
  name: "chat",
  context: 8192,
  profiles: [
    { name: "l40s", engine: "vllm", source: "/models/qwen", gpu_class: "l40s", gpus: 1 },
    { name: "cpu", engine: "llamacpp", source: "/models/qwen.gguf", slots: 2 },
  ],
});

describe("checkContextChange", () => {
  it("sets the context and, with --slots, the slots of every llama.cpp profile", () => {
    const entry = checkContextChange({ model: chat, tokens: 16384, slots: 4, facts, fleet, gpuMemoryUtilization: 0.9 });
    expect(entry.context).toBe(16384);
    expect(entry.profiles?.map((profile) => profile.slots)).toEqual([undefined, 4]);
  });

  it("refuses more than the model was trained for, naming the trained context and where it was read", () => {
    const error = refusalOf(() => checkContextChange({ model: chat, tokens: 65536, slots: undefined, facts, fleet, gpuMemoryUtilization: 0.9 }));
    expect(error.code).toBe("context_too_long");
    expect(error.message).toBe("65536 tokens is more than chat was trained for (32768); nothing was changed");
    expect(error.details.map((detail) => detail.where)).toEqual(["profile l40s", "profile cpu"]);
    expect(error.details[0]?.message).toBe("/models/qwen was trained for 32768 tokens (fixtures/Qwen2.5-7B-Instruct/config.json)");
  });

  it("refuses a context the cards would not hold, with the planner's figures per card", () => {
    const big = modelOf({ name: "big", context: 16384, profiles: [{ name: "pair", engine: "vllm", source: "/models/llama70", gpu_class: "h100", gpus: 2 }] });
    expect(checkContextChange({ model: big, tokens: 16384, slots: undefined, facts, fleet, gpuMemoryUtilization: 0.9 }).context).toBe(16384);
    const error = refusalOf(() => checkContextChange({ model: big, tokens: 131072, slots: undefined, facts, fleet, gpuMemoryUtilization: 0.9 }));
    expect(error.code).toBe("does_not_fit");
    expect(error.message).toMatch(/^a 131072-token context does not fit the cards big runs on: profile pair .* short; nothing was changed$/);
    expect(error.details).toHaveLength(1);
    // 131072 tokens × 80 layers × 8 KV heads × 128 × 2 (K and V) × 2 bytes, halved over two cards: 20 GiB; 0.90 of an 80 GiB card is 72 GiB.
    const match = /^profile pair \(vllm, 2 cards\): each of its 2 cards would need (\d+\.\d) GiB \((\d+\.\d) GiB weights, (\d+\.\d) GiB runtime overhead, 20\.0 GiB KV cache for 131072 tokens\); the largest h100 card has 72\.0 GiB usable \(0\.90 of 80\.0 GiB\): (\d+\.\d) GiB short$/.exec(
      error.details[0]?.message ?? "",
    );
    expect(match, error.details[0]?.message).not.toBeNull();
    const [need, weights, overhead, shortBy] = (match ?? []).slice(1).map(Number) as [number, number, number, number];
    expect(need).toBeCloseTo(weights + overhead + 20, 0);
    expect(shortBy).toBeCloseTo(need - 72, 0);
  });

  it("counts every llama.cpp slot's context on the cards", () => {
    const gguf = modelOf({ name: "gguf", context: 8192, profiles: [{ name: "l40s", engine: "llamacpp", source: "/models/qwen", gpu_class: "l40s", gpus: 1, quantization: "Q4_K_M" }] });
    expect(checkContextChange({ model: gguf, tokens: 32768, slots: 4, facts, fleet, gpuMemoryUtilization: 0.9 }).context).toBe(32768);
    const error = refusalOf(() => checkContextChange({ model: gguf, tokens: 32768, slots: 32, facts, fleet, gpuMemoryUtilization: 0.9 }));
    expect(error.code).toBe("does_not_fit");
    expect(error.details[0]?.message).toContain("KV cache for 1048576 tokens");
  });

  it("refuses --slots for a model without a llama.cpp profile, and any change to an external model", () => {
    const vllmOnly = modelOf({ name: "v", profiles: [{ engine: "vllm", source: "/models/qwen", gpu_class: "l40s" }] });
    expect(refusalOf(() => checkContextChange({ model: vllmOnly, tokens: 4096, slots: 2, facts, fleet, gpuMemoryUtilization: 0.9 })).message).toContain("--slots applies to llama.cpp profiles, and v has none (vllm: vllm)");
    const external = modelOf({ name: "gpt", external: { base_url: "https://api.example.com/v1" } });
    expect(refusalOf(() => checkContextChange({ model: external, tokens: 4096, slots: undefined, facts, fleet, gpuMemoryUtilization: 0.9 })).code).toBe("invalid_profile");
  });
});
