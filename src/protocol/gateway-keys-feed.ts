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
