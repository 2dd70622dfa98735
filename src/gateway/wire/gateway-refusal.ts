/** A refusal in OpenAI's error shape: the gateway sends it as it is. */
export class GatewayRefusal extends Error {
  constructor(
    readonly status: 401 | 403 | 429,
    readonly type: string,
    readonly code: string,
    message: string,
    /** Seconds, sent as Retry-After (429). */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = "GatewayRefusal";
  }
}
