import { describe, expect, it } from "vitest";
import { slowedByPipeline } from "./pipeline-timing.js";
import { decodeStepMilliseconds, simTimingFromEnvironment } from "./sim-timing.js";

describe("a pipeline member's decode rate", () => {
  // DeepSeek-V3 in FP8 over 2 nodes × 8 H100: its first stage (31 of 61 layers and the embedding) puts 44.9 GB on each card, as the planner figures it.
  const largestStage = { LLMGW_SIM_WEIGHTS_BYTES_PER_CARD: "44858128564", LLMGW_SIM_GPU_CLASS: "h100" };

  it("reads the largest stage's weights per card once per stage, the stages in turn", () => {
    const alone = simTimingFromEnvironment("vllm", largestStage, 8);
    expect(alone.decodeTokensPerSecond).toBeCloseTo(3350e9 / 44_858_128_564, 6); // 74.7 tokens/s for one stage
    const piped = slowedByPipeline(alone, 2);
    expect(piped.decodeTokensPerSecond).toBeCloseTo(3350e9 / 44_858_128_564 / 2, 6); // 37.3 tokens/s through both
    expect(decodeStepMilliseconds(piped)).toBeCloseTo(26.78, 2); // 2 × 44.9 GB / 3,350 GB/s a token
    expect(piped.prefillTokensPerSecond).toBeCloseTo(50 * piped.decodeTokensPerSecond, 6);
    expect(piped.source).toBe("h100 at 3350 GB/s, 44.9 GB of weights per card (the largest stage's), 2 pipeline stages in turn");
  });

  it("changes nothing without a pipeline", () => {
    const alone = simTimingFromEnvironment("sglang", largestStage, 16);
    expect(slowedByPipeline(alone, 1)).toEqual(alone);
  });
});
