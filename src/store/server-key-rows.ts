import type { Kysely } from "kysely";
import type { Database } from "./schema.js";

export async function readServerKeyCheck(db: Kysely<Database>): Promise<string | undefined> {
  return (await db.selectFrom("server_key_check").select("verifier").where("id", "=", 1).executeTakeFirst())?.verifier;
}

/** Records the key's check unless one is there already (another server's, written first): answers the check in force. */
export async function recordServerKeyCheck(db: Kysely<Database>, verifier: string, at: string): Promise<string> {
  await db
    .insertInto("server_key_check")
    .values({ id: 1, verifier, created_at: at })
    .onConflict((conflict) => conflict.column("id").doNothing())
    .execute();
  return (await readServerKeyCheck(db)) ?? verifier;
}
