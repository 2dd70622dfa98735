import type { Kysely } from "kysely";
import type { Database } from "./schema.js";

export type CanaryRow = Database["canaries"];

/** The canary rows, one per model (running, or the last one that ended). Postgres hands doubles back as numbers, SQLite too. */
export async function listCanaries(db: Kysely<Database>): Promise<CanaryRow[]> {
  const rows = await db.selectFrom("canaries").selectAll().orderBy("model").execute();
  return rows.map((row) => ({ ...row, weight: Number(row.weight), replicas: Number(row.replicas) }));
}

export async function findCanary(db: Kysely<Database>, model: string): Promise<CanaryRow | undefined> {
  return (await listCanaries(db)).find((row) => row.model === model);
}

/** A new canary replaces the model's previous (ended) one. */
export async function putCanary(db: Kysely<Database>, row: CanaryRow): Promise<void> {
  await db.deleteFrom("canaries").where("model", "=", row.model).execute();
  await db.insertInto("canaries").values(row).execute();
}

export async function updateCanary(db: Kysely<Database>, model: string, change: Partial<Omit<CanaryRow, "model">>): Promise<void> {
  await db.updateTable("canaries").set(change).where("model", "=", model).execute();
}

/** A promoted canary's replicas become stable ones, placed now, so the rolling restart that follows keeps them. */
export async function makeCanaryReplicasStable(db: Kysely<Database>, model: string, at: string): Promise<number> {
  const result = await db
    .updateTable("replica_intents")
    .set({ arm: null, placed_at: at })
    .where("model", "=", model)
    .where("arm", "=", "canary")
    .where("withdrawn_at", "is", null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}
