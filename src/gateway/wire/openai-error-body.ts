import { DomainError } from "../../errors/domain-error.js";
import { asInvoked } from "../../llmgw-invocation.js";
import { statusForCode } from "../../protocol/http-status.js";
import { GatewayRefusal } from "../policy/gateway-policy.js";
import type { OpenAIErrorBody } from "../../protocol/openai-error-body.js";
import { RetryLater } from "./retry-later.js";

// The error shape OpenAI's clients read (they raise it with its message, type and code): one declaration for the gateway and the engines.
export type { OpenAIErrorBody } from "../../protocol/openai-error-body.js";

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

/** The body field a refusal names, as OpenAI's `param`: a body check puts it first in the details. */
function paramOf(error: DomainError): string | null {
  if (error.code === "context_length_exceeded") return error.details[0]?.where ?? "messages";
  if (error.code === "invalid_input") return error.details[0]?.where ?? null;
  return null;
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
      // The hint's commands as this gateway was started (npx llmgw in a clone): the best guess of how its operator runs llmgw.
      body: { error: { message: `${error.message}. ${asInvoked(error.hint)}`, type: typeForStatus(status), param: paramOf(error), code: error.code } },
      retryAfterSeconds: error instanceof RetryLater ? error.retryAfterSeconds : undefined,
    };
  }
  return {
    status: 500,
    body: { error: { message: `the gateway failed while handling this request; its log has the details under request id ${requestId}`, type: "server_error", param: null, code: "internal" } },
    retryAfterSeconds: undefined,
  };
}
