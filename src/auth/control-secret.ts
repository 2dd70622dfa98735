import { createHmac } from "node:crypto";

/**
 * The secret the server presents to a node's agent (server → agent), derived
 * rather than stored: HMAC of the node's credential hash under the server
 * key. It changes with every join (a new credential) and can be rebuilt by
 * any server holding the key, while the database alone does not yield it.
 * The agent keeps only its sha256.
 */
export function deriveControlSecret(serverKey: Buffer, credentialHash: string): string {
  return `llmgw_control_${createHmac("sha256", serverKey).update(`agent-control\0${credentialHash}`).digest("base64url")}`;
}
