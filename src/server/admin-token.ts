import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { hashToken, newToken } from "../auth/index.js";
import { type Store, countTokens, insertToken } from "../store/index.js";
import { adminTokenFileName } from "./admin-token-file.js";

export { adminTokenFileName, dataDirOption } from "./admin-token-file.js";

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

/**
 * The 401 answer's hint, read by whoever can reach the port: it says how to
 * get a token, the first one included (`ctl token create` needs a token
 * already), and never the path where this server keeps it (the data directory
 * is the server's business; its own terminal output at start says where the
 * token is, for the operator). It names no file, not even the default's,
 * which would tell a stranger how the server is laid out.
 */
export const adminTokenHint =
  "Send an admin-API token: --token or LLMGW_TOKEN (the header Authorization: Bearer TOKEN). The first admin token is the one the server printed at its first start, and it keeps it in its data directory: on the server's machine, `llmgw ctl --data-dir DIR` (DIR: that data directory) reads it from there. With an admin token, `llmgw ctl token create NAME` makes more; elsewhere, ask the server's operator for one.";

