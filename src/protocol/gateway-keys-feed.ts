import { z } from "zod";

/**
 * What a standalone gateway (`llmgw gateway`) exchanges with its server to
 * enforce keys without a database: the key table with hashes (never keys),
 * and the usage it counted, in batches. Both need an admin token, the one the
 * gateway already holds for the routing table.
 *
 * Lenient on the way in to a gateway (a newer server may add fields), strict
 * on the way in to the server (a batch is added to the books as sent).
 */
export const gatewayKeyFeedEntrySchema = z.object({
  name: z.string(),
  key_hash: z.string(),
  models: z.array(z.string()).nullable(),
  rpm: z.number().int().positive().nullable(),
  tpm: z.number().int().positive().nullable(),
  // Absent from the feed of a server older than per-key caps: its keys take the gateway's own cap.
  max_in_flight: z.number().int().positive().nullable().default(null),
  expires_at: z.string().nullable(),
  created_at: z.string(),
  revoked_at: z.string().nullable(),
});
export type GatewayKeyFeedEntry = z.infer<typeof gatewayKeyFeedEntrySchema>;

export const gatewayKeyFeedSchema = z.object({ keys: z.array(gatewayKeyFeedEntrySchema) });

const count = z.number().int().min(0);

/** Rows in one usage batch from a gateway: bounded, so one request's body stays small. */
export const usageBatchLimit = 1000;

export const usageBatchSchema = z.strictObject({
  usage: z
    .array(
      z.strictObject({
        key: z.string().min(1),
        model: z.string().min(1),
        minute: z.string().regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}Z$/, { message: "a minute such as 2026-11-30T17:42Z" }),
        requests: count,
        errors: count,
        prompt_tokens: count,
        completion_tokens: count,
      }),
    )
    .max(usageBatchLimit),
});
export type UsageBatch = z.infer<typeof usageBatchSchema>;

export interface UsageIncrement {
  readonly key: string;
  readonly model: string;
  /** The minute the use fell in, `2026-11-30T17:42Z`. */
  readonly minute: string;
  readonly requests: number;
  readonly errors: number;
  readonly promptTokens: number;
  readonly completionTokens: number;
}

/** An increment as the table (and the gateways' usage batches on the wire) spell it. */
export function usageRow(increment: UsageIncrement) {
  return {
    key: increment.key,
    model: increment.model,
    minute: increment.minute,
    requests: increment.requests,
    errors: increment.errors,
    prompt_tokens: increment.promptTokens,
    completion_tokens: increment.completionTokens,
  };
}

/** The minute a time falls in, as the usage table keys it. */
export function usageMinute(atMs: number): string {
  return `${new Date(atMs).toISOString().slice(0, 16)}Z`;
}

/** One gateway key as a gateway enforces it: its hash, never the key. */
export interface GatewayKey {
  readonly id: string;
  readonly name: string;
  readonly hash: string;
  readonly models: readonly string[] | null;
  readonly rpm: number | null;
  readonly tpm: number | null;
  /** Requests the key may have in flight at once; null for the gateway's limits.requests_per_key. */
  readonly maxInFlight: number | null;
  readonly expiresAt: string | null;
  readonly createdAt: string;
  readonly revokedAt: string | null;
}
