import { z } from "zod";

const counts = z.array(z.number().int().min(0)).max(64);

/** What one gateway counted for one model in one 10-second step. */
export const seriesStepReportSchema = z.strictObject({
  model: z.string().min(1).max(256),
  /** The step's start, ms since the epoch. */
  start: z.number().int().min(0),
  requests: z.number().int().min(0),
  errors: z.number().int().min(0),
  completion_tokens: z.number().int().min(0),
  /** Counts per latency bucket and per time-to-first-token bucket, in the gateway's bucket order (1 ms rising by √2). */
  latency: counts,
  ttft: counts,
});
export type SeriesStepReport = z.infer<typeof seriesStepReportSchema>;

/**
 * POST /api/v1/gateway/series: what a standalone gateway counted since its
 * last report, added to the server's per-model series. A report that failed
 * is added back and sent with the next one.
 */
export const seriesReportSchema = z.strictObject({
  steps: z.array(seriesStepReportSchema).max(20_000),
});
export type SeriesReport = z.infer<typeof seriesReportSchema>;
