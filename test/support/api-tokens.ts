import { randomUUID } from "node:crypto";
import { hashToken, newToken } from "../../src/auth/tokens.js";
import type { Store } from "../../src/store/open-store.js";
import { insertToken } from "../../src/store/token-rows.js";

/** An admin token ("admin") and a read-only one ("dashboard") in the store, for tests of the admin API; with the header each sends. */
export async function insertApiTokens(store: Store): Promise<{ admin: string; reader: string; as: (token: string) => { authorization: string } }> {
  const admin = newToken("admin");
  const reader = newToken("read");
  const at = new Date().toISOString();
  await insertToken(store.db, { id: randomUUID(), name: "admin", role: "admin", hash: hashToken(admin) }, at);
  await insertToken(store.db, { id: randomUUID(), name: "dashboard", role: "read", hash: hashToken(reader) }, at);
  return { admin, reader, as: (token) => ({ authorization: `Bearer ${token}` }) };
}
