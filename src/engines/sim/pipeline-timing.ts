import type { SimTiming } from "./sim-timing.js";

/**
 * The timing of one member of a pipeline of `stages`. The planner's weights
 * per card for a pipeline are the largest stage's share (what the busiest
 * card reads per token), and LLMGW_SIM_WEIGHTS_BYTES_PER_CARD carries that
 * figure. One sequence's token passes every stage in turn, each stage
 * waiting for the one before, so a decode step takes the stages one after
 * another: at most `stages` times the largest stage's read, which is the
 * rate here (the hop between nodes, tens of microseconds, is small beside
 * a stage's milliseconds and left out). Prefill keeps its ratio to decode:
 * a prompt also crosses every stage.
 */
export function slowedByPipeline(timing: SimTiming, stages: number): SimTiming {
  if (stages <= 1) return timing;
  const decodeTokensPerSecond = timing.decodeTokensPerSecond / stages;
  return {
    ...timing,
    decodeTokensPerSecond,
    prefillTokensPerSecond: (timing.prefillTokensPerSecond / timing.decodeTokensPerSecond) * decodeTokensPerSecond,
    source: `${timing.source}${timing.source === "defaults" ? "" : " (the largest stage's)"}, ${stages} pipeline stages in turn`,
  };
}
