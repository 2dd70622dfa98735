import { describe, expect, it } from "vitest";
import { bitsPerWeight, ggmlTensorBytes } from "../catalog/ggml-types.js";
import { fixtureArchitecture, fixtureFacts } from "./testing/fixtures.js";
import { tensorInventory } from "./tensor-inventory.js";
import {
  ggufTensorType,
  int4BitsPerWeight,
  usesMoreBits,
  weightsBytes,
  weightsBytesPerCardLayerSplit,
  weightsBytesPerCardTensorParallel,
} from "./weights.js";

describe("ggml block layouts", () => {
  it("give the real bits per weight", () => {
    expect(bitsPerWeight("Q8_0")).toBe(8.5);
    expect(bitsPerWeight("Q4_0")).toBe(4.5);
    expect(bitsPerWeight("Q4_K")).toBe(4.5);
    expect(bitsPerWeight("Q5_K")).toBe(5.5);
    expect(bitsPerWeight("Q6_K")).toBe(6.5625);
    expect(bitsPerWeight("IQ4_XS")).toBe(4.25);
  });

  it("round a tensor up to whole blocks", () => {
    expect(ggmlTensorBytes("Q8_0", 33)).toBe(68);
  });
});

describe("GGUF mixes", () => {
  const llama8b = fixtureArchitecture("Llama-3.1-8B");
  const inventory = tensorInventory(llama8b);
  const find = (name: string) => inventory.find((tensor) => tensor.name === name)!;

  it("keep Q4_K_M's output head and the use-more-bits attn_v/ffn_down at Q6_K", () => {
    expect(ggufTensorType("Q4_K_M", find("lm_head.weight"), llama8b)).toBe("Q6_K");
    expect(ggufTensorType("Q4_K_M", find("model.layers.0.self_attn.v_proj.weight"), llama8b)).toBe("Q6_K");
    expect(ggufTensorType("Q4_K_M", find("model.layers.4.self_attn.v_proj.weight"), llama8b)).toBe("Q4_K");
    expect(ggufTensorType("Q4_K_M", find("model.layers.6.mlp.down_proj.weight"), llama8b)).toBe("Q6_K");
    expect(ggufTensorType("Q4_K_M", find("model.layers.5.self_attn.q_proj.weight"), llama8b)).toBe("Q4_K");
  });

  it("leave norms in F32", () => {
    expect(ggufTensorType("Q4_K_M", find("model.norm.weight"), llama8b)).toBe("F32");
  });

  it("fall back to 32-wide blocks on rows that are not a multiple of 256", () => {
    const qwen72 = fixtureArchitecture("Qwen2.5-72B-Instruct");
    const down = tensorInventory(qwen72).find((tensor) => tensor.name === "model.layers.11.mlp.down_proj.weight")!;
    expect(ggufTensorType("Q4_K_M", down, qwen72)).toBe("Q5_0");
    const boosted = tensorInventory(qwen72).find((tensor) => tensor.name === "model.layers.5.mlp.down_proj.weight")!;
    expect(ggufTensorType("Q4_K_M", boosted, qwen72)).toBe("Q8_0");
  });

  it("mark the first and last eighth and every third layer between as use-more-bits", () => {
    const marked = Array.from({ length: 32 }, (_, layer) => usesMoreBits(layer, 32));
    expect(marked.filter(Boolean)).toHaveLength(16);
    expect(marked.slice(0, 4).every(Boolean)).toBe(true);
    expect(marked.slice(28).every(Boolean)).toBe(true);
  });
});

describe("weightsBytes", () => {
  const facts = fixtureFacts("Llama-3.1-8B");

  it("is two bytes per parameter at bf16", () => {
    expect(weightsBytes(facts.architecture, facts.parameters, "bf16")).toBe(facts.parameters * 2);
  });

  it("prices int4 with its group scales and zeros, keeping embeddings and head at 16 bits", () => {
    expect(int4BitsPerWeight).toBeCloseTo(4.15625);
    // hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4 is 5.73 GB.
    expect(weightsBytes(facts.architecture, facts.parameters, "int4") / 1e9).toBeCloseTo(5.73, 1);
  });

  it("scales with the measured parameter count, not the inventory's", () => {
    expect(weightsBytes(facts.architecture, facts.parameters * 1.1, "bf16")).toBeCloseTo(facts.parameters * 2.2, -3);
  });
});

describe("weights per card", () => {
  const facts = fixtureFacts("Llama-3.3-70B-Instruct");

  it("splits everything but norms evenly over tensor-parallel cards", () => {
    const perCard = weightsBytesPerCardTensorParallel(facts.architecture, facts.parameters, "bf16", 2);
    const whole = facts.parameters * 2;
    expect(perCard).toBeGreaterThan(whole / 2);
    expect(perCard - whole / 2).toBeLessThan(2e6); // only the replicated norms
  });

  it("replicates K and V projections once cards outnumber KV heads", () => {
    const qwen = fixtureFacts("Qwen2.5-7B-Instruct"); // 4 KV heads
    const eight = weightsBytesPerCardTensorParallel(qwen.architecture, qwen.parameters, "bf16", 8);
    const kvProjections = 28 * 2 * (4 * 128 * 3584 + 4 * 128) * 2; // k and v weights and biases
    const whole = qwen.parameters * 2;
    // Everything else is split eight ways; each card keeps a whole KV head (a quarter of K and V).
    expect(eight).toBeCloseTo((whole - kvProjections) / 8 + kvProjections / 4, -6);
  });

  it("puts whole layers and the output head on the last card of a llama.cpp split", () => {
    const one = weightsBytesPerCardLayerSplit(facts.architecture, facts.parameters, "Q4_K_M", 1);
    const two = weightsBytesPerCardLayerSplit(facts.architecture, facts.parameters, "Q4_K_M", 2);
    expect(two).toBeGreaterThan(one / 2);
    expect(two).toBeLessThan(one);
  });
});
