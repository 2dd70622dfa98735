import type { Kysely } from "kysely";
import type { Database } from "./schema.js";

/** A source's figures as the planner last read them (what the planner made of its files, as JSON), and when. */
export interface StoredSourceFacts {
  /** Whoever reads it checks it is figures it can use: the store does not know their shape. */
  readonly facts: unknown;
  readonly read_at: string;
}

/** Keeps the figures read from a source's files now, replacing what an earlier read kept. */
export async function saveSourceFacts(db: Kysely<Database>, source: string, facts: unknown, at: string): Promise<void> {
  const row = { source, facts: JSON.stringify(facts), read_at: at };
  await db
    .insertInto("source_facts")
    .values(row)
    .onConflict((conflict) => conflict.column("source").doUpdateSet({ facts: row.facts, read_at: row.read_at }))
    .execute();
}

/** The figures last read from a source; undefined when none were kept, or when the row is not JSON (written by hand, cut short). */
export async function findSourceFacts(db: Kysely<Database>, source: string): Promise<StoredSourceFacts | undefined> {
  const row = await db.selectFrom("source_facts").selectAll().where("source", "=", source).executeTakeFirst();
  if (!row) return undefined;
  try {
    return { facts: JSON.parse(row.facts) as unknown, read_at: row.read_at };
  } catch {
    return undefined;
  }
}
