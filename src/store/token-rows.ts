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
