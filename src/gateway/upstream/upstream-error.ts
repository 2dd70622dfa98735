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
  ) {
    super(message);
    this.name = "UpstreamError";
  }

  /** Statuses after which another replica may well succeed: the engine is overloaded, restarting or behind a failing proxy. */
  static retryableStatus(status: number): boolean {
    return status === 502 || status === 503;
  }
}
