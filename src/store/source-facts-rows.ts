import type { Kysely } from "kysely";
import type { ModelFacts } from "../plan/model-facts.js";
import type { Database } from "./schema.js";

/** A source's figures as the planner last read them, and when. */
export interface StoredSourceFacts {
  readonly facts: ModelFacts;
  readonly read_at: string;
}

/** Keeps the figures read from a source's files now, replacing what an earlier read kept. */
export async function saveSourceFacts(db: Kysely<Database>, source: string, facts: ModelFacts, at: string): Promise<void> {
  const row = { source, facts: JSON.stringify(facts), read_at: at };
  await db
    .insertInto("source_facts")
    .values(row)
    .onConflict((conflict) => conflict.column("source").doUpdateSet({ facts: row.facts, read_at: row.read_at }))
    .execute();
}

/**
 * The figures last read from a source; undefined when none were kept, or
 * when the row is not figures this release can use (written by hand, cut
 * short): a change then says what it cannot check, as with no row at all.
 */
export async function findSourceFacts(db: Kysely<Database>, source: string): Promise<StoredSourceFacts | undefined> {
  const row = await db.selectFrom("source_facts").selectAll().where("source", "=", source).executeTakeFirst();
  if (!row) return undefined;
  try {
    const facts = JSON.parse(row.facts) as ModelFacts;
    return looksLikeFacts(facts) ? { facts, read_at: row.read_at } : undefined;
  } catch {
    return undefined;
  }
}

/** The figures the memory arithmetic reads first; a row without them is not used. */
function looksLikeFacts(facts: ModelFacts): boolean {
  return (
    typeof facts === "object" &&
    facts !== null &&
    typeof facts.parameters === "number" &&
    typeof facts.architecture?.layers === "number" &&
    typeof facts.checkpoint?.bytes === "number"
  );
}
