import { z } from "zod";

/**
 * What the workers of one `llmgw gateway --workers N` exchange with their
 * primary over the cluster's IPC channel: charges against the keys' rate
 * limits, sent in batches (every request a worker read in one turn of its
 * event loop goes in one message), and the primary's answers; and the
 * metrics of all workers, for whichever worker was scraped. Both sides
 * check what they receive, as they would from any other process.
 */
const limitsCharge = z.object({
  id: z.number().int().nonnegative(),
  key: z.string().min(1),
  rpm: z.number().int().nonnegative().nullable(),
  tpm: z.number().int().nonnegative().nullable(),
  tokens: z.number().nonnegative(),
  counts_request: z.boolean(),
});

export const limitsBatchSchema = z.object({
  type: z.literal("llmgw-limits-batch"),
  charges: z.array(limitsCharge),
  /** Estimates replaced by what the engine reported, per key: tokens to add (negative to take back). */
  corrections: z.array(z.object({ key: z.string().min(1), tokens: z.number() })),
});
export type LimitsBatch = z.infer<typeof limitsBatchSchema>;

/** One answer per charge: admitted, or the 429 the worker sends its client. */
const limitsVerdict = z.object({
  id: z.number().int().nonnegative(),
  refusal: z
    .object({
      type: z.string(),
      code: z.string(),
      message: z.string(),
      retry_after_seconds: z.number().int().positive().nullable(),
    })
    .nullable(),
});

export const limitsVerdictsSchema = z.object({
  type: z.literal("llmgw-limits-verdicts"),
  verdicts: z.array(limitsVerdict),
});
export type LimitsVerdicts = z.infer<typeof limitsVerdictsSchema>;

/** A worker asks for the metrics of all workers (its /metrics was scraped): the primary gathers them from every worker. */
export const metricsRequestSchema = z.object({ type: z.literal("llmgw-metrics-request"), id: z.number().int().nonnegative() });
export type MetricsRequest = z.infer<typeof metricsRequestSchema>;

/** The workers' metrics summed in Prometheus text, or why they could not be gathered. */
export const metricsAnswerSchema = z.object({
  type: z.literal("llmgw-metrics"),
  id: z.number().int().nonnegative(),
  text: z.string().nullable(),
  error: z.string().nullable(),
});
export type MetricsAnswer = z.infer<typeof metricsAnswerSchema>;
