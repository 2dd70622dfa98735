import { describe, expect, it } from "vitest";
import { largestStageLayers, pipelineStageLayers, pipelineStagesReason, weightsBytesPerCardPipeline } from "./pipeline.js";
import { fixtureArchitecture, fixtureFacts } from "./testing/fixtures.js";
import { weightsBytesPerCardTensorParallel } from "./weights.js";

describe("pipelineStageLayers", () => {
  it("splits layers as vLLM does: even shares, the remainder on the stages before the last", () => {
    expect(pipelineStageLayers(61, 2)).toEqual([31, 30]);
    expect(pipelineStageLayers(126, 4)).toEqual([31, 32, 32, 31]);
    expect(pipelineStageLayers(10, 3)).toEqual([3, 4, 3]);
    expect(pipelineStageLayers(80, 1)).toEqual([80]);
  });

  it("always accounts for every layer", () => {
    for (let layers = 1; layers <= 130; layers += 7) {
      for (let stages = 1; stages <= Math.min(layers, 8); stages += 1) {
        const split = pipelineStageLayers(layers, stages);
        expect(split.reduce((sum, count) => sum + count, 0)).toBe(layers);
        expect(Math.max(...split) - Math.min(...split)).toBeLessThanOrEqual(1);
      }
    }
  });

  it("names the largest stage and refuses more stages than layers", () => {
    expect(largestStageLayers(61, 2)).toBe(31);
    expect(pipelineStagesReason(4, 3)).toBe("4 pipeline stages need at least 4 layers, the model has 3");
    expect(pipelineStagesReason(3, 3)).toBeUndefined();
  });
});

describe("weightsBytesPerCardPipeline", () => {
  it("is the tensor-parallel share when there is one stage", () => {
    const facts = fixtureFacts("Llama-3.1-405B");
    const architecture = fixtureArchitecture("Llama-3.1-405B");
    expect(weightsBytesPerCardPipeline(architecture, facts.parameters, "bf16", { tensor: 8, pipeline: 1 })).toBe(
      weightsBytesPerCardTensorParallel(architecture, facts.parameters, "bf16", 8),
    );
  });

  it("holds the largest stage's layers plus its end of the model: about half for two stages", () => {
    const facts = fixtureFacts("Llama-3.1-405B");
    const architecture = facts.architecture;
    const whole = weightsBytesPerCardTensorParallel(architecture, facts.parameters, "bf16", 8);
    const half = weightsBytesPerCardPipeline(architecture, facts.parameters, "bf16", { tensor: 8, pipeline: 2 });
    expect(half / whole).toBeGreaterThan(0.5);
    expect(half / whole).toBeLessThan(0.51);
  });

  it("puts DeepSeek-V3's 31-layer first stage (three dense layers among them) ahead of the 30-layer last", () => {
    const facts = fixtureFacts("DeepSeek-V3");
    const busiest = weightsBytesPerCardPipeline(facts.architecture, facts.parameters, "fp8", { tensor: 8, pipeline: 2 });
    const oneNode = weightsBytesPerCardTensorParallel(facts.architecture, facts.parameters, "fp8", 8);
    expect(busiest / oneNode).toBeGreaterThan(30 / 61);
    expect(busiest / oneNode).toBeLessThan(32 / 61);
  });
});
