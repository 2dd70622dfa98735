import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { hashToken, newToken } from "../auth/tokens.js";
import type { Store } from "../store/open-store.js";
import { countTokens, insertToken } from "../store/token-rows.js";

export const adminTokenFileName = "admin-token";

/**
 * On the very first start (no tokens in the store) creates the admin token,
 * writes it to DATA_DIR/admin-token readable by this user only, and returns it
 * so the caller prints it once. Only its hash is stored.
 */
export async function bootstrapAdminToken(store: Store, dataDir: string): Promise<{ token: string; file: string } | undefined> {
  if ((await countTokens(store.db)) > 0) return undefined;
  const token = newToken("admin");
  const file = path.join(dataDir, adminTokenFileName);
  // Write the file first: a token stored but never shown would lock everyone out.
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  await insertToken(store.db, { id: randomUUID(), name: "admin", role: "admin", hash: hashToken(token) }, new Date().toISOString());
  return { token, file };
}

export function adminTokenHint(dataDir: string): string {
  return `Send an admin token: --token or LLMGW_TOKEN. The first start printed one and wrote it to ${path.join(dataDir, adminTokenFileName)} on the server's machine (ctl run from the server's folder finds it by itself).`;
}
