import { DomainError } from "../errors/domain-error.js";
import { statusForCode } from "../protocol/http-status.js";
import { GatewayRefusal } from "./gateway-policy.js";
import { RetryLater } from "./retry-later.js";

/** The error shape OpenAI's clients read: they raise it with its message, type and code. */
export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string };
}

export interface OpenAIErrorAnswer {
  readonly status: number;
  readonly body: OpenAIErrorBody;
  readonly retryAfterSeconds: number | undefined;
}

/** OpenAI's error types by status, so a client's own error classes (RateLimitError, NotFoundError...) match. */
function typeForStatus(status: number): string {
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 429) return "rate_limit_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

/**
 * Any failure on /v1 as the answer a client gets: a gateway policy's refusal
 * as it is, a DomainError with its hint folded into the message (OpenAI's
 * shape has no hint field, and the fix must still reach the person), and
 * anything else as a 500 that says where to look, without internals.
 */
export function openAIErrorAnswer(error: unknown, requestId: string): OpenAIErrorAnswer {
  if (error instanceof GatewayRefusal) {
    return {
      status: error.status,
      body: { error: { message: error.message, type: error.type, param: null, code: error.code } },
      retryAfterSeconds: error.retryAfterSeconds,
    };
  }
  if (error instanceof DomainError) {
    const status = statusForCode[error.code];
    return {
      status,
      body: { error: { message: `${error.message}. ${error.hint}`, type: typeForStatus(status), param: error.code === "context_length_exceeded" ? "messages" : null, code: error.code } },
      retryAfterSeconds: error instanceof RetryLater ? error.retryAfterSeconds : undefined,
    };
  }
  return {
    status: 500,
    body: { error: { message: `the gateway failed while handling this request; its log has the details under request id ${requestId}`, type: "server_error", param: null, code: "internal" } },
    retryAfterSeconds: undefined,
  };
}
