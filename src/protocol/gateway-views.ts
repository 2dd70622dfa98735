/**
 * The admin API's answers about gateway keys and usage, as tools see them
 * (`ctl keys --json`, `ctl usage --json`, scripts): a field is added, never
 * renamed. Never a key itself, nor its hash: a key is shown once, in the
 * answer that created it (GatewayKeyCreated).
 */

/** `revoked` and `expired` keys stay listed: their names and usage remain. */
export type GatewayKeyState = "active" | "expired" | "revoked";

export interface GatewayKeyView {
  name: string;
  state: GatewayKeyState;
  /** Model, alias or adapter names the key may use; null for every one. */
  models: string[] | null;
  /** Requests per minute (sliding over the last 60 seconds); null for no limit. */
  rpm: number | null;
  /** Prompt plus completion tokens per minute; null for no limit. */
  tpm: number | null;
  /** Requests the key may have in flight at once; null for the gateway's limits.requests_per_key (256 unless set). */
  max_in_flight: number | null;
  expires_at: string | null;
  created_at: string;
  revoked_at: string | null;
}

export interface GatewayKeyCreated extends GatewayKeyView {
  /** The key, in this answer only: it is stored hashed. */
  key: string;
  /**
   * Set when this server's own gateway is open: it checks no key, so this
   * key limits nothing there. Says what setting turns checking on, and where.
   */
  notice: string | null;
}

/** One key's use of one model over the asked period. */
export interface UsageView {
  key: string;
  model: string;
  requests: number;
  errors: number;
  prompt_tokens: number;
  completion_tokens: number;
  /** The first and last minute with use, e.g. 2026-11-30T17:42Z. */
  first_minute: string;
  last_minute: string;
}

export interface UsageAnswer {
  /** The start of the period (ISO time), and its end (now). */
  since: string;
  until: string;
  usage: UsageView[];
}
