import { z } from "zod";

/** One gateway's counts for one model's arm over one 5-second slot. */
export const armSlotSchema = z.strictObject({
  model: z.string().min(1).max(256),
  arm: z.enum(["stable", "canary"]),
  /** Start of the slot, ms since the epoch. */
  start: z.number().int().min(0),
  requests: z.number().int().min(0),
  errors: z.number().int().min(0),
  /** Counts per latency bucket, in the gateway's bucket order. */
  latency: z.array(z.number().int().min(0)).max(64),
});
export type ArmSlotReport = z.infer<typeof armSlotSchema>;

/**
 * POST /api/v1/gateway/arms: what a gateway counted per arm of models with a
 * canary since its last report. A slot reported again replaces the earlier
 * report of it (its counts only grow), so a report that failed is simply
 * sent again with the next one.
 */
export const armCountsReportSchema = z.strictObject({
  /** Stable for the gateway process's life, so its reports of one slot replace each other. */
  gateway: z.string().min(1).max(200),
  slots: z.array(armSlotSchema).max(5000),
});
export type ArmCountsReport = z.infer<typeof armCountsReportSchema>;
