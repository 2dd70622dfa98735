import type { Kysely } from "kysely";
import type { Database } from "./schema.js";

export type TokenRole = "admin" | "read";

export interface TokenRow {
  readonly id: string;
  readonly name: string;
  readonly role: TokenRole;
}

export async function countTokens(db: Kysely<Database>): Promise<number> {
  const row = await db.selectFrom("api_tokens").select((eb) => eb.fn.countAll<string | number>().as("count")).executeTakeFirstOrThrow();
  return Number(row.count);
}

export async function insertToken(db: Kysely<Database>, token: TokenRow & { hash: string }, at: string): Promise<void> {
  await db.insertInto("api_tokens").values({ id: token.id, name: token.name, role: token.role, token_hash: token.hash, created_at: at }).execute();
}

export async function findTokenByHash(db: Kysely<Database>, hash: string): Promise<TokenRow | undefined> {
  const row = await db.selectFrom("api_tokens").select(["id", "name", "role"]).where("token_hash", "=", hash).executeTakeFirst();
  return row ? { id: row.id, name: row.name, role: row.role as TokenRole } : undefined;
}

export interface TokenListing {
  readonly name: string;
  readonly role: TokenRole;
  readonly created_at: string;
}

/** Names, roles and dates only: the hash never leaves the store. */
export async function listTokens(db: Kysely<Database>): Promise<TokenListing[]> {
  const rows = await db.selectFrom("api_tokens").select(["name", "role", "created_at"]).orderBy("created_at").orderBy("name").execute();
  return rows.map((row) => ({ name: row.name, role: row.role as TokenRole, created_at: row.created_at }));
}

export async function deleteTokenByName(db: Kysely<Database>, name: string): Promise<boolean> {
  const result = await db.deleteFrom("api_tokens").where("name", "=", name).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}
