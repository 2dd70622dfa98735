import type { Kysely } from "kysely";
import type { Database } from "./schema.js";
import { usageRow, type UsageIncrement } from "../protocol/index.js";

export interface UsageTotal {
  readonly key: string;
  readonly model: string;
  readonly requests: number;
  readonly errors: number;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly firstMinute: string;
  readonly lastMinute: string;
}

/**
 * Adds a batch to the stored counts in one transaction. Adding (not
 * overwriting) lets several servers sharing Postgres each write what they
 * counted into the same minute's row.
 */
export async function addUsage(db: Kysely<Database>, increments: readonly UsageIncrement[]): Promise<void> {
  if (increments.length === 0) return;
  await db.transaction().execute(async (transaction) => {
    // Chunks keep each statement under SQLite's bound-parameter limit.
    for (let start = 0; start < increments.length; start += 100) {
      await transaction
        .insertInto("usage")
        .values(
          increments.slice(start, start + 100).map(usageRow),
        )
        .onConflict((conflict) =>
          conflict.columns(["key", "model", "minute"]).doUpdateSet((eb) => ({
            requests: eb("usage.requests", "+", eb.ref("excluded.requests")),
            errors: eb("usage.errors", "+", eb.ref("excluded.errors")),
            prompt_tokens: eb("usage.prompt_tokens", "+", eb.ref("excluded.prompt_tokens")),
            completion_tokens: eb("usage.completion_tokens", "+", eb.ref("excluded.completion_tokens")),
          })),
        )
        .execute();
    }
  });
}

export interface UsageFilter {
  /** The first minute counted, `2026-11-30T17:42Z`. */
  readonly sinceMinute: string;
  readonly key?: string | undefined;
  readonly model?: string | undefined;
}

/** Totals per key and model from `sinceMinute` on, busiest first. */
export async function sumUsage(db: Kysely<Database>, filter: UsageFilter): Promise<UsageTotal[]> {
  let query = db
    .selectFrom("usage")
    .select((eb) => [
      "key",
      "model",
      eb.fn.sum<string | number>("requests").as("requests"),
      eb.fn.sum<string | number>("errors").as("errors"),
      eb.fn.sum<string | number>("prompt_tokens").as("prompt_tokens"),
      eb.fn.sum<string | number>("completion_tokens").as("completion_tokens"),
      eb.fn.min<string>("minute").as("first_minute"),
      eb.fn.max<string>("minute").as("last_minute"),
    ])
    .where("minute", ">=", filter.sinceMinute)
    .groupBy(["key", "model"]);
  if (filter.key !== undefined) query = query.where("key", "=", filter.key);
  if (filter.model !== undefined) query = query.where("model", "=", filter.model);
  const rows = await query.execute();
  return rows
    .map((row) => ({
      key: row.key,
      model: row.model,
      requests: Number(row.requests),
      errors: Number(row.errors),
      promptTokens: Number(row.prompt_tokens),
      completionTokens: Number(row.completion_tokens),
      firstMinute: row.first_minute,
      lastMinute: row.last_minute,
    }))
    .sort((left, right) => right.requests - left.requests || left.key.localeCompare(right.key) || left.model.localeCompare(right.model));
}

