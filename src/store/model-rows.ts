import type { Kysely } from "kysely";
import type { ModelEntry } from "../catalog/index.js";
import type { Database } from "./schema.js";

/** Runtime-added models. Entries are written only after the whole catalog validated, so they are read back as trusted. */
export async function listModelEntries(db: Kysely<Database>): Promise<ModelEntry[]> {
  const rows = await db.selectFrom("models").select(["entry"]).orderBy("name").execute();
  return rows.map((row) => JSON.parse(row.entry) as ModelEntry);
}

export async function insertModelEntry(db: Kysely<Database>, entry: ModelEntry, at: string): Promise<void> {
  await db.insertInto("models").values({ name: entry.name, entry: JSON.stringify(entry), created_at: at, updated_at: at }).execute();
}

export async function replaceModelEntry(db: Kysely<Database>, entry: ModelEntry, at: string): Promise<void> {
  await db.updateTable("models").set({ entry: JSON.stringify(entry), updated_at: at }).where("name", "=", entry.name).execute();
}

export async function deleteModelEntry(db: Kysely<Database>, name: string): Promise<boolean> {
  const result = await db.deleteFrom("models").where("name", "=", name).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** The catalog's revision: raised by every catalog change, in the change's own transaction (open-store's withCatalogLock). */
export async function readCatalogRevision(db: Kysely<Database>): Promise<number> {
  const row = await db.selectFrom("catalog_revision").select("revision").where("id", "=", 1).executeTakeFirst();
  return Number(row?.revision ?? 0);
}

