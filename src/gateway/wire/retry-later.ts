import { DomainError } from "../../errors/light.js";

/** A domain error whose answer carries Retry-After: the model is loading, or its queue is full. */
export class RetryLater extends DomainError {
  constructor(
    code: "model_loading" | "queue_full" | "gateway_shutting_down",
    message: string,
    hint: string,
    readonly retryAfterSeconds: number,
  ) {
    super(code, message, hint);
  }
}
