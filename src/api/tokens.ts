import { createHash, randomBytes } from "node:crypto";

/**
 * Tokens are 32 random bytes, so a fast hash is enough to store them: there is
 * nothing to brute-force that a slow hash would protect (unlike passwords).
 * The prefix says what a leaked token is for when it turns up in a paste.
 */
export function newToken(kind: "admin" | "read" | "join" | "node"): string {
  return `llmgw_${kind}_${randomBytes(32).toString("base64url")}`;
}

export function hashToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}
