import type { Kysely } from "kysely";
import type { ArmSlotReport } from "../protocol/index.js";
import type { Database } from "./schema.js";

/** How long reported counts are kept: a gate window longer than that reads what is kept. */
const keptMs = 3_600_000;

/** Stores a gateway's slots, each replacing that gateway's earlier report of the same slot; drops what is older than an hour. */
export async function putArmSlots(db: Kysely<Database>, gateway: string, slots: readonly ArmSlotReport[], nowMs: number): Promise<void> {
  for (const slot of slots) {
    const row = {
      gateway,
      model: slot.model,
      arm: slot.arm,
      slot_start: new Date(slot.start).toISOString(),
      requests: slot.requests,
      errors: slot.errors,
      latency: JSON.stringify(slot.latency),
    };
    await db
      .insertInto("arm_counts")
      .values(row)
      .onConflict((conflict) => conflict.columns(["gateway", "model", "arm", "slot_start"]).doUpdateSet({ requests: row.requests, errors: row.errors, latency: row.latency }))
      .execute();
  }
  await db.deleteFrom("arm_counts").where("slot_start", "<", new Date(nowMs - keptMs).toISOString()).execute();
}

/** Every gateway's slots for one model's arm since a time, except `exceptGateway`'s (counted in memory by the caller). */
export async function listArmSlots(
  db: Kysely<Database>,
  filter: { model: string; arm: string; sinceMs: number; notBeforeMs: number; exceptGateway: string },
): Promise<{ requests: number; errors: number; latency: number[] }[]> {
  const rows = await db
    .selectFrom("arm_counts")
    .select(["requests", "errors", "latency"])
    .where("model", "=", filter.model)
    .where("arm", "=", filter.arm)
    .where("gateway", "!=", filter.exceptGateway)
    // A slot that started up to 5 s before `since` holds requests after it.
    .where("slot_start", ">", new Date(filter.sinceMs - 5000).toISOString())
    // A slot that started before the canary holds an earlier canary's requests.
    .where("slot_start", ">=", new Date(filter.notBeforeMs).toISOString())
    .execute();
  return rows.map((row) => ({ requests: Number(row.requests), errors: Number(row.errors), latency: parseLatency(row.latency) }));
}

/** Lenient: a row that does not parse counts no latency, rather than failing the view. */
function parseLatency(text: string): number[] {
  try {
    const parsed: unknown = JSON.parse(text);
    return Array.isArray(parsed) ? parsed.map((value) => (typeof value === "number" && Number.isFinite(value) ? value : 0)) : [];
  } catch {
    return [];
  }
}
