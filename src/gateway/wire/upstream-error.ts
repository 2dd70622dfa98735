/**
 * Connection errors that say nothing listens at the upstream's endpoint any
 * more, when no byte of an answer came: the engine was killed (refused), died
 * with the request (reset, or a write into the closed connection), or its
 * node is gone (a connect that times out, no route to the host). An engine
 * that is up answers something, even if only an error status.
 */
const endpointGoneCodes: ReadonlySet<string> = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  // The gateway's own HTTP/1.1 pool's connect timeout.
  "UPSTREAM_CONNECT_TIMEOUT",
  // undici's, for an https upstream: its connect timeout, and the other side closing the connection.
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_SOCKET",
]);

/**
 * A failure of one upstream (a replica's engine, or an external provider)
 * before its answer reached the client. `retryable` alone decides whether the
 * gateway tries another replica or a fallback: connection refused or reset,
 * and 502 or 503, say the next upstream may answer; anything else is the
 * engine's own answer and goes to the client as it is.
 */
export class UpstreamError extends Error {
  constructor(
    /** The upstream's HTTP status, or undefined when no answer came (refused, reset, cut before the first byte). */
    readonly status: number | undefined,
    readonly retryable: boolean,
    /** Which upstream failed: a replica id, or "external NAME". */
    readonly upstream: string,
    message: string,
    /** The connection error's code (ECONNREFUSED, ECONNRESET, ...) when no answer came; undefined otherwise. */
    readonly connectionCode?: string,
  ) {
    super(message);
    this.name = "UpstreamError";
  }

  /**
   * True when the upstream's endpoint itself is gone: no answer at all, for a
   * reason only a dead engine or node gives. False for any HTTP status (an
   * engine that answers 500 or 503 is up, and a status says nothing about the
   * next request) and for a client that went away (not retryable).
   */
  get endpointGone(): boolean {
    return this.status === undefined && this.retryable && this.connectionCode !== undefined && endpointGoneCodes.has(this.connectionCode);
  }

  /** Statuses after which another replica may well succeed: the engine is overloaded, restarting or behind a failing proxy. */
  static retryableStatus(status: number): boolean {
    return status === 502 || status === 503;
  }
}
