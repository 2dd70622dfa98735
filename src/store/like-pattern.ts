import { sql, type RawBuilder } from "kysely";

/**
 * A LIKE pattern finding `text` anywhere, in any case (compare it with the
 * column lowered: SQLite's LIKE ignores case and Postgres's does not), with
 * LIKE's own wildcards in the text taken as themselves.
 */
export function likePattern(text: string): RawBuilder<string> {
  const escaped = text.toLowerCase().replace(/[\\%_]/g, (character) => `\\${character}`);
  return sql<string>`${`%${escaped}%`} escape '\\'`;
}
