import { describe, expect, it } from "vitest";
import { bytesNeededPerCard, maxContext, runtimeOverheadBytes, usableBytes, type ContextBudget } from "./memory.js";
import { fixtureArchitecture } from "./testing/fixtures.js";

const GiB = 1024 ** 3;

describe("usableBytes", () => {
  it("reserves 10% of the card by default, once", () => {
    expect(usableBytes(80 * GiB)).toBe(Math.floor(72 * GiB));
    expect(usableBytes(80 * GiB, 0.95)).toBe(Math.floor(76 * GiB));
  });
});

describe("runtimeOverheadBytes", () => {
  it("charges each rank from its own share, plus NCCL buffers only when tensor parallel", () => {
    const single = runtimeOverheadBytes("vllm", 40 * GiB, 1);
    const split = runtimeOverheadBytes("vllm", 20 * GiB, 2);
    expect(single).toBeCloseTo(1.0 * GiB + 0.03 * 40 * GiB, -3);
    expect(split).toBeCloseTo(1.5 * GiB + 0.03 * 20 * GiB, -3);
  });

  it("charges llama.cpp less (no CUDA graphs)", () => {
    expect(runtimeOverheadBytes("llamacpp", 10 * GiB, 1)).toBeLessThan(runtimeOverheadBytes("vllm", 10 * GiB, 1));
  });
});

describe("maxContext", () => {
  const llama = fixtureArchitecture("Llama-3.1-8B");
  const budget = (usable: number): ContextBudget => ({
    architecture: llama,
    usableBytes: usable,
    weightsBytesPerCard: 16 * GiB,
    overheadBytesPerCard: 1 * GiB,
    cards: 1,
    kvLayout: "tensor_parallel",
  });

  it("is what the bytes left hold, to the token", () => {
    const context = maxContext(budget(21 * GiB));
    expect(context).toBe(Math.floor((4 * GiB) / 131072));
    expect(bytesNeededPerCard(budget(21 * GiB), context)).toBeLessThanOrEqual(21 * GiB);
    expect(bytesNeededPerCard(budget(21 * GiB), context + 1)).toBeGreaterThan(21 * GiB);
  });

  it("is capped at the trained context", () => {
    expect(maxContext(budget(200 * GiB))).toBe(131072);
  });

  it("is zero when the weights and overhead alone do not fit", () => {
    expect(maxContext(budget(16 * GiB))).toBe(0);
  });

  it("counts gemma-2's sliding layers at the window beyond 4096 tokens", () => {
    const gemma = fixtureArchitecture("gemma-2-9b-it");
    const left = 2 * 8 * 256 * 2 * (21 * 8192 + 21 * 4096);
    const context = maxContext({ architecture: gemma, usableBytes: left + 2 * GiB, weightsBytesPerCard: GiB, overheadBytesPerCard: GiB, cards: 1, kvLayout: "tensor_parallel" });
    expect(context).toBe(8192);
  });
});
