import { describe, expect, it } from "vitest";
import { decodeStepMilliseconds, simTimingFromEnvironment, timeToFirstTokenMilliseconds } from "./sim-timing.js";

describe("simulated timing from the planner's numbers", () => {
  it("decodes a 7B model at bf16 on an H100 at bandwidth over weights per card: about 220 tokens a second", () => {
    const timing = simTimingFromEnvironment("vllm", { LLMGW_SIM_WEIGHTS_BYTES_PER_CARD: "15200000000", LLMGW_SIM_GPU_CLASS: "h100" }, 1);
    expect(timing.decodeTokensPerSecond).toBeCloseTo(3350e9 / 15.2e9, 6);
    expect(decodeStepMilliseconds(timing)).toBeCloseTo(1000 / 220.39, 1);
  });

  it("takes longer to the first token for a longer prompt", () => {
    const timing = simTimingFromEnvironment("vllm", { LLMGW_SIM_WEIGHTS_BYTES_PER_CARD: "15200000000", LLMGW_SIM_GPU_CLASS: "h100" }, 1);
    expect(timeToFirstTokenMilliseconds(timing, 8000)).toBeGreaterThan(timeToFirstTokenMilliseconds(timing, 100));
    // 8,000 prompt tokens at 50 × 220 tokens/s of prefill, plus one decode step: about 0.73 s.
    expect(timeToFirstTokenMilliseconds(timing, 8000)).toBeCloseTo((8000 / (50 * 220.39) + 1 / 220.39) * 1000, 0);
  });

  it("prefers an explicit bandwidth to the card class, and divides every delay by the speed", () => {
    const timing = simTimingFromEnvironment(
      "vllm",
      { LLMGW_SIM_WEIGHTS_BYTES_PER_CARD: "1000000000", LLMGW_SIM_GPU_CLASS: "h100", LLMGW_SIM_BANDWIDTH_GBPS: "100", LLMGW_SIM_SPEED: "10" },
      1,
    );
    expect(timing.decodeTokensPerSecond).toBe(100);
    expect(decodeStepMilliseconds(timing)).toBe(1);
  });

  it("is fast when the planner gave nothing", () => {
    const timing = simTimingFromEnvironment("llamacpp", {}, 0);
    expect(timing.decodeTokensPerSecond).toBe(1000);
    expect(timing.source).toBe("defaults");
  });

  it("refuses a speed that is not a positive number, naming the variable", () => {
    expect(() => simTimingFromEnvironment("vllm", { LLMGW_SIM_SPEED: "fast" }, 1)).toThrow(/LLMGW_SIM_SPEED must be a number greater than 0/);
  });
});
