/**
 * What the gateway asks of its keys, limits and usage accounting, on every
 * request and never from the store on the hot path: an implementation keeps
 * keys and counters in memory, refreshed off the request path, and writes
 * usage in batches (journalled on disk in between).
 *
 * The gateway's request path (routing, proxying, retries) knows only this
 * interface; `open` auth (a loopback demo) and API keys are two
 * implementations of it.
 */

/** Who is calling: a gateway key's name, or null when the gateway is open. */
export interface GatewayCaller {
  readonly key: string | null;
  /** Model, alias or adapter names this caller may use; null for any. */
  readonly allowedModels: readonly string[] | null;
  /**
   * The key's own cap on requests in flight (its max_in_flight), in place of
   * the gateway's limits.requests_per_key; absent or null, the gateway's.
   */
  readonly maxInFlight?: number | null;
}

export interface UsageRecord {
  readonly caller: GatewayCaller;
  /** The model that answered (after fallbacks), as the catalog names it. */
  readonly model: string;
  readonly promptTokens: number;
  readonly completionTokens: number;
  /** True when the client got an error (any status >= 400, or a stream cut). */
  readonly error: boolean;
}

export interface GatewayPolicy {
  /** Throws GatewayRefusal (401) for a missing, unknown, revoked or expired key. */
  authenticate(authorization: string | undefined): GatewayCaller;
  /**
   * Before any engine sees the request: throws GatewayRefusal 403 when the
   * caller may not use `name`, 429 when its request or token rate is spent.
   * `estimatedTokens` is the prompt plus max_tokens as the gateway counted them.
   * A promise when the decision is taken in another process (the limits of
   * several gateway workers); undefined when taken here, so the common case
   * costs no promise.
   */
  admit(caller: GatewayCaller, name: string, estimatedTokens: number): Promise<void> | void;
  /**
   * Before the answer's last byte: counts tokens (against the rate limit, and
   * into usage). A promise while the usage is not yet on disk: the answer
   * ends once it settles, so a crash after the client has its answer cannot
   * lose the answer's usage.
   */
  record(usage: UsageRecord): Promise<void> | void;
}
