import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

/**
 * Tokens are 32 random bytes, so a fast hash is enough to store them: there is
 * nothing to brute-force that a slow hash would protect (unlike passwords).
 * The prefix says what a leaked token is for when it turns up in a paste.
 */
export function newToken(kind: "admin" | "read" | "join" | "node" | "replica" | "key"): string {
  return `llmgw_${kind}_${randomBytes(32).toString("base64url")}`;
}

export function hashToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

/** Compares a presented secret with the expected one in constant time, so it cannot be guessed byte by byte from response times. */
export function sameSecret(given: string, expected: string): boolean {
  const left = Buffer.from(given);
  const right = Buffer.from(expected);
  return left.length === right.length && timingSafeEqual(left, right);
}
