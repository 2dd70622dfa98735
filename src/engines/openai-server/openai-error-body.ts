import type { z } from "zod";

/**
 * OpenAI's error body as the engines llmgw serves itself write it. `param`
 * is always there (null when no one field is at fault), as in OpenAI's own
 * answers: clients read it to name the field, and a body that leaves it out
 * reads as a different shape. `code` is the HTTP status, as vLLM and
 * llama-server write it.
 */
export interface OpenAIErrorBody {
  readonly error: { readonly message: string; readonly type: string; readonly param: string | null; readonly code: number };
}

/** `type` is the engine's own word for the failure (vLLM's "BadRequestError", llama-server's "invalid_request_error"). */
export function errorBody(status: number, type: string, message: string, param: string | null = null): OpenAIErrorBody {
  return { error: { message, type, param, code: status } };
}

/** The field a schema refusal is about: the path of its first issue, dotted (`messages.0.content`). */
export function paramOfIssues(issues: readonly z.core.$ZodIssue[]): string | null {
  const path = issues[0]?.path ?? [];
  return path.length === 0 ? null : path.map(String).join(".");
}
