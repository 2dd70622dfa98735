import { describe, expect, it } from "vitest";
import { kvBytesPerToken, kvCacheBytes, kvCacheBytesPerCard, kvReplication } from "./kv-cache.js";
import { fixtureArchitecture } from "./testing/fixtures.js";

describe("kvBytesPerToken", () => {
  it("counts KV heads, never attention heads", () => {
    const llama = fixtureArchitecture("Llama-3.3-70B-Instruct");
    expect(kvBytesPerToken(llama)).toBe(2 * 80 * 8 * 128 * 2);
    // The formula with attention heads in place of KV heads would say 8× more:
    // this fails if anyone swaps the fields.
    expect(kvBytesPerToken(llama)).not.toBe(2 * 80 * 64 * 128 * 2);
    expect(kvBytesPerToken({ ...llama, attentionHeads: 1 })).toBe(kvBytesPerToken(llama));
  });

  it("caches one latent plus the rope key per layer for MLA", () => {
    expect(kvBytesPerToken(fixtureArchitecture("DeepSeek-V2-Lite"))).toBe(27 * (512 + 64) * 2);
  });

  it("uses the same attention formula for MoE models", () => {
    expect(kvBytesPerToken(fixtureArchitecture("Mixtral-8x7B-v0.1"))).toBe(kvBytesPerToken(fixtureArchitecture("Mistral-7B-v0.3")));
  });

  it("scales with the element size (an fp8 cache is half)", () => {
    const qwen = fixtureArchitecture("Qwen2.5-7B-Instruct");
    expect(kvBytesPerToken(qwen, 1)).toBe(kvBytesPerToken(qwen) / 2);
  });
});

describe("kvCacheBytes", () => {
  it("grows linearly with context for full-attention models", () => {
    const qwen = fixtureArchitecture("Qwen2.5-7B-Instruct");
    expect(kvCacheBytes(qwen, 32768)).toBe(32768 * kvBytesPerToken(qwen));
  });

  it("caps gemma-2's sliding layers at the 4096-token window", () => {
    const gemma = fixtureArchitecture("gemma-2-9b-it");
    const perLayer = 2 * 8 * 256 * 2;
    expect(kvCacheBytes(gemma, 4096)).toBe(4096 * kvBytesPerToken(gemma));
    expect(kvCacheBytes(gemma, 8192)).toBe(perLayer * (21 * 8192 + 21 * 4096));
  });
});

describe("kvCacheBytesPerCard", () => {
  const llama = fixtureArchitecture("Llama-3.3-70B-Instruct");

  it("splits KV heads over tensor-parallel cards", () => {
    expect(kvCacheBytesPerCard(llama, 1000, 2, "tensor_parallel")).toBe(kvCacheBytes(llama, 1000) / 2);
  });

  it("replicates KV heads once the cards outnumber them, which multiplies KV memory per card", () => {
    const qwen = fixtureArchitecture("Qwen2.5-7B-Instruct"); // 4 KV heads
    expect(kvReplication(qwen, 4)).toBe(1);
    expect(kvReplication(qwen, 8)).toBe(2);
    // 8 cards hold one KV head each: the same per card as 4 cards.
    expect(kvCacheBytesPerCard(qwen, 1000, 8, "tensor_parallel")).toBe(kvCacheBytesPerCard(qwen, 1000, 4, "tensor_parallel"));
  });

  it("keeps the whole MLA latent on every rank", () => {
    const deepseek = fixtureArchitecture("DeepSeek-V2-Lite");
    expect(kvCacheBytesPerCard(deepseek, 1000, 4, "tensor_parallel")).toBe(kvCacheBytes(deepseek, 1000));
  });

  it("gives each card of a llama.cpp layer split the cache of its own layers", () => {
    expect(kvCacheBytesPerCard(llama, 1000, 3, "layer_split")).toBe((kvCacheBytes(llama, 1000) * 27) / 80);
  });
});
