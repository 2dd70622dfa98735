import { describe, expect, it } from "vitest";
import { largeModelRows, largeModelTable } from "./calibration-multi-node.js";
import { fixtureArchitecture } from "./testing/fixtures.js";

describe("calibration of the models that need several nodes", () => {
  const rows = largeModelRows(fixtureArchitecture);

  it.each(largeModelTable.map((entry) => entry.fixture))("counts %s's parameters from its config.json within 1% of the published count", (fixture) => {
    const row = rows.find((candidate) => candidate.fixture === fixture && candidate.quantity === "parameters");
    expect(Math.abs(row?.error ?? Infinity)).toBeLessThanOrEqual(0.01);
  });

  it("predicts the stored checkpoints' sizes: DeepSeek-V3 in FP8, Llama-3.1-405B in bf16", () => {
    const stored = rows.filter((row) => row.quantity === "stored_bytes");
    expect(stored.map((row) => row.fixture)).toEqual(["DeepSeek-V3", "Llama-3.1-405B"]);
    for (const row of stored) expect(Math.abs(row.error), row.fixture).toBeLessThanOrEqual(row.tolerance);
  });

  it("gives MLA's KV cache per token (latent plus rope key, no heads), not a grouped-query figure", () => {
    const kv = Object.fromEntries(rows.filter((row) => row.quantity === "kv_bytes_per_token").map((row) => [row.fixture, row.predicted]));
    expect(kv).toEqual({ "DeepSeek-V3": 70_272, "Llama-3.1-405B": 516_096, "Kimi-K2-Instruct": 70_272 });
  });

  it("reads the architectures as published: 61 layers and 256 or 384 experts, 126 layers and 8 KV heads", () => {
    expect(fixtureArchitecture("DeepSeek-V3")).toMatchObject({ layers: 61, attentionHeads: 128, trainedContext: 163_840, moe: { experts: 256, expertsPerToken: 8, denseLayers: 3 } });
    expect(fixtureArchitecture("Kimi-K2-Instruct")).toMatchObject({ layers: 61, attentionHeads: 64, moe: { experts: 384, denseLayers: 1 } });
    expect(fixtureArchitecture("Llama-3.1-405B")).toMatchObject({ layers: 126, attentionHeads: 128, kvHeads: 8, trainedContext: 131_072 });
  });
});
