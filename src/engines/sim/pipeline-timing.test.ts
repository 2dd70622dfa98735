import { describe, expect, it } from "vitest";
import { slowedByPipeline } from "./pipeline-timing.js";
import { decodeStepMilliseconds, simTimingFromEnvironment } from "./sim-timing.js";

describe("a pipeline member's decode rate", () => {
  // DeepSeek-V3 in FP8 over 2 nodes × 8 H100: 31 of its 61 layers on the first stage, about 44 GB on each of its cards.
  const largestStage = { LLMGW_SIM_WEIGHTS_BYTES_PER_CARD: "44000000000", LLMGW_SIM_GPU_CLASS: "h100" };

  it("reads the largest stage's weights per card once per stage, the stages in turn", () => {
    const alone = simTimingFromEnvironment("vllm", largestStage, 8);
    expect(alone.decodeTokensPerSecond).toBeCloseTo(3350 / 44, 6); // about 76 tokens/s for one stage
    const piped = slowedByPipeline(alone, 2);
    expect(piped.decodeTokensPerSecond).toBeCloseTo(3350 / 44 / 2, 6); // about 38 tokens/s through both
    expect(decodeStepMilliseconds(piped)).toBeCloseTo((2 * 44e9 * 1000) / 3350e9, 6); // 26.3 ms a token
    expect(piped.prefillTokensPerSecond).toBeCloseTo(50 * piped.decodeTokensPerSecond, 6);
    expect(piped.source).toBe("h100 at 3350 GB/s, 44.0 GB of weights per card (the largest stage's), 2 pipeline stages in turn");
  });

  it("changes nothing without a pipeline", () => {
    const alone = simTimingFromEnvironment("sglang", largestStage, 16);
    expect(slowedByPipeline(alone, 1)).toEqual(alone);
  });
});
