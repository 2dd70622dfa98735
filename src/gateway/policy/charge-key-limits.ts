import { GatewayRefusal } from "../wire/gateway-refusal.js";
import type { SlidingWindow } from "./sliding-window.js";

/** One key's spending over the last minute, per limit. */
export interface KeyLimits {
  readonly requests: SlidingWindow;
  readonly tokens: SlidingWindow;
}

/** What a charge needs to know of a key: its name (for the refusal) and its limits (null: none). */
export interface LimitedKey {
  readonly name: string;
  readonly rpm: number | null;
  readonly tpm: number | null;
}

/**
 * Charges one request to a key's windows, or refuses it with a 429 before
 * anything is charged: `countsRequest` is false when the same request was
 * counted already, `tokens` is its prompt plus max_tokens as estimated.
 * Written once, so a gateway process and the primary of several gateway
 * workers (which keeps the windows of all of them) refuse alike.
 */
export function chargeKeyLimits(limits: KeyLimits, key: LimitedKey, tokens: number, countsRequest: boolean, nowMs: number): void {
  if (key.rpm !== null && countsRequest) {
    const wait = limits.requests.secondsUntilFits(1, key.rpm, nowMs);
    if (wait > 0) {
      throw new GatewayRefusal(429, "requests", "rate_limit_exceeded", `API key "${key.name}" has used its ${key.rpm} requests per minute. Try again in ${wait}s.`, wait);
    }
  }
  if (key.tpm !== null) {
    if (tokens > key.tpm) {
      // Waiting never helps this one, so it gets no Retry-After.
      throw new GatewayRefusal(
        429,
        "tokens",
        "request_too_large",
        `This request needs about ${tokens} tokens (prompt plus max_tokens), more than API key "${key.name}" may use in a whole minute (${key.tpm}). Send a shorter prompt or a lower max_tokens, or ask an administrator for a higher --tpm.`,
      );
    }
    const wait = limits.tokens.secondsUntilFits(tokens, key.tpm, nowMs);
    if (wait > 0) {
      throw new GatewayRefusal(
        429,
        "tokens",
        "rate_limit_exceeded",
        `API key "${key.name}" has used its ${key.tpm} tokens per minute (this request needs about ${tokens}). Try again in ${wait}s.`,
        wait,
      );
    }
  }
  if (countsRequest) limits.requests.add(1, nowMs);
  limits.tokens.add(tokens, nowMs);
}
