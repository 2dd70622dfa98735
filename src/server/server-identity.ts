import { createHmac } from "node:crypto";

/**
 * The identity a server presents to agents, derived from its server key
 * (server-key.ts) rather than stored beside it: every server sharing one
 * database must hold that key already (the database keeps a check of it), so
 * they present one identity, and it outlives a change of the server's URL,
 * its scheme or its host. Any other server has another key, hence another
 * identity. An HMAC of a fixed label: it tells nothing of the key, nor of
 * the control secrets derived from it with other labels.
 */
export function serverIdentity(key: Buffer): string {
  return createHmac("sha256", key).update("llmgw server identity").digest("hex").slice(0, 32);
}
