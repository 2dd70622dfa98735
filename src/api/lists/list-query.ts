import { z } from "zod";
import { DomainError } from "../../errors/light.js";

/**
 * What every list of the admin API takes to be paged through: `limit` (no
 * limit: everything, as ctl reads it), an opaque `cursor` from the previous
 * page's `next_cursor`, and a text search `q` (case-insensitive, within the
 * fields each list names).
 */
export const pageQueryShape = {
  limit: z.coerce.number({ message: "a whole number from 1 to 1000" }).int({ message: "a whole number from 1 to 1000" }).min(1, { message: "at least 1" }).max(1000, { message: "at most 1000 at a time; page on with next_cursor" }).optional().describe("At most this many items; the answer then carries next_cursor (null on the last page). Without it: the whole list."),
  cursor: z
    .string()
    .max(1000)
    .refine((cursor) => readCursor(cursor) !== undefined, { message: "not a cursor this server gave; pass the next_cursor of the previous page as it came, or leave cursor out for the first page" })
    .optional()
    .describe("The previous page's next_cursor, as it came: the page after it."),
  q: z.string().min(1, { message: "give text to search for, or leave q out" }).max(200, { message: "at most 200 characters" }).optional().describe("Text to search for, case-insensitively, in the fields the list names."),
};

export interface PageQuery {
  readonly limit?: number | undefined;
  readonly cursor?: string | undefined;
  readonly q?: string | undefined;
}

/** Whether the caller pages: an answer to a paged query carries `next_cursor`; one without keeps the shape it always had. */
export function isPaged(query: PageQuery): boolean {
  return query.limit !== undefined || query.cursor !== undefined;
}

/** No filter, no search and no page: the whole list, the answer a list keeps built. */
export function isWholeList(query: Record<string, unknown>): boolean {
  return Object.values(query).every((value) => value === undefined);
}

/** A cursor names the sort key of the last item given, so a page never repeats or skips an item when others are added or removed before it. */
export function encodeCursor(after: string): string {
  return Buffer.from(JSON.stringify({ after }), "utf8").toString("base64url");
}

function readCursor(cursor: string): string | undefined {
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    return undefined;
  }
  const parsed = z.strictObject({ after: z.string() }).safeParse(decoded);
  return parsed.success ? parsed.data.after : undefined;
}

/** The sort key a cursor names; the query's schema has refused any other cursor already. */
export function decodeCursor(cursor: string): string {
  const after = readCursor(cursor);
  if (after === undefined) throw new DomainError("invalid_input", "query: cursor: not a cursor this server gave", "Pass the next_cursor of the previous page as it came, or leave cursor out to start from the first page.");
  return after;
}

/** A cursor into a list ordered by id (events, audit): the id of the last item given. */
export function encodeIdCursor(id: number): string {
  return encodeCursor(String(id));
}

export function decodeIdCursor(cursor: string | undefined): number | undefined {
  if (cursor === undefined) return undefined;
  const id = Number(decodeCursor(cursor));
  if (!Number.isSafeInteger(id)) throw new DomainError("invalid_input", "query: cursor: not a cursor of this list", "Pass the next_cursor of the previous page of the same list, or leave cursor out for the first page.");
  return id;
}

export interface Page<Item> {
  readonly items: readonly Item[];
  readonly next_cursor: string | null;
}

/**
 * One page of `items` (already filtered), ordered by `key` (unique per
 * item), from just after the cursor. Sorted here by code-point order, not
 * by the store's collation, so a cursor means the same on SQLite and
 * Postgres.
 */
export function pageOf<Item>(items: readonly Item[], key: (item: Item) => string, query: PageQuery): Page<Item> {
  const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
  const keyed = items.map((item) => ({ item, key: key(item) })).sort((left, right) => (left.key < right.key ? -1 : left.key > right.key ? 1 : 0));
  const rest = after === undefined ? keyed : keyed.filter((entry) => entry.key > after);
  const limit = query.limit ?? rest.length;
  const page = rest.slice(0, limit);
  const last = page.at(-1);
  return { items: page.map((entry) => entry.item), next_cursor: rest.length > limit && last !== undefined ? encodeCursor(last.key) : null };
}

/** Whether any of `fields` holds `q`, case-insensitively; no `q` matches everything. */
export function matchesText(q: string | undefined, fields: readonly (string | null | undefined)[]): boolean {
  if (q === undefined) return true;
  const needle = q.toLowerCase();
  return fields.some((field) => field?.toLowerCase().includes(needle) === true);
}
