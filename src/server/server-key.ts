import { createHmac, randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { DomainError } from "../errors/light.js";
import { privateFileMode } from "../files/index.js";
import { type Store, readServerKeyCheck, recordServerKeyCheck } from "../store/index.js";

export const serverKeyFileName = "server-key";

/**
 * The key the server proves itself to agents with. The secret an agent
 * checks on every control call (start an engine: code run on a GPU node) is
 * derived from this key and the node's credential hash (control-secret.ts),
 * so neither a copy of the database nor this file alone is enough to
 * command a node. Storing that secret in the database, the simpler choice,
 * would have made a database dump worth more than any other leak.
 *
 * It lives in DATA_DIR/server-key (0600), made at the first start, or comes
 * from LLMGW_SERVER_KEY (64 hex digits: a container whose data directory
 * does not persist, a secret manager). Servers sharing one Postgres database
 * must hold the same key: the database keeps an HMAC check of it, and a
 * server with another key (or none) refuses to start, rather than run while
 * every agent refuses its calls.
 */
export interface ServerKey {
  readonly key: Buffer;
  readonly file: string;
}

function verifierOf(key: Buffer): string {
  return createHmac("sha256", key).update("llmgw server key check").digest("hex");
}

export const serverKeyVariable = "LLMGW_SERVER_KEY";

function parseKey(text: string, place: string): Buffer {
  if (!/^[0-9a-f]{64}$/.test(text.trim())) {
    throw new DomainError(
      "config_invalid",
      `${place} is not a server key (64 hexadecimal digits)`,
      "Restore it from the server that made it (or from another server sharing this database); a new key would make every agent refuse this server.",
    );
  }
  return Buffer.from(text.trim(), "hex");
}

function readKeyFile(file: string): Buffer | undefined {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  return parseKey(text, file);
}

/** `fromEnvironment`: the value of LLMGW_SERVER_KEY, which takes the place of the file when set. */
export async function loadServerKey(store: Store, dataDir: string, fromEnvironment?: string, now: () => Date = () => new Date()): Promise<ServerKey> {
  const file = fromEnvironment ? serverKeyVariable : path.join(dataDir, serverKeyFileName);
  const recorded = await readServerKeyCheck(store.db);
  let key = fromEnvironment ? parseKey(fromEnvironment, serverKeyVariable) : readKeyFile(file);
  if (key === undefined) {
    if (recorded !== undefined) throw mismatch(store, file, "is missing");
    key = randomBytes(32);
    // wx: two servers starting at once on one data directory must not each write a key.
    writeFileSync(file, `${key.toString("hex")}\n`, { mode: privateFileMode, flag: "wx" });
  }
  const verifier = verifierOf(key);
  const inForce = recorded ?? (await recordServerKeyCheck(store.db, verifier, now().toISOString()));
  if (inForce !== verifier) throw mismatch(store, file, "differs from it");
  return { key, file };
}

function mismatch(store: Store, file: string, what: string): DomainError {
  return new DomainError(
    "config_invalid",
    `this ${store.kind} database was first used by a server with another key, and ${file} ${what}: agents would refuse every call from this server`,
    file === serverKeyVariable
      ? `Set ${serverKeyVariable} to the key of a server already using this database (its DATA_DIR/server-key); every server sharing the database needs the same key.`
      : `Copy server-key from the data directory of a server already using this database to ${file} (chmod 600), or set ${serverKeyVariable} to its contents; every server sharing the database needs the same key.`,
  );
}
