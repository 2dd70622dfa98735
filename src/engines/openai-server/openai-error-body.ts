import type { z } from "zod";
import type { OpenAIErrorBody } from "../../protocol/openai-error-body.js";

/** OpenAI's error body with the HTTP status as its code, as vLLM and llama-server write it. */
export type EngineErrorBody = OpenAIErrorBody<number>;

/** `type` is the engine's own word for the failure (vLLM's "BadRequestError", llama-server's "invalid_request_error"). */
export function errorBody(status: number, type: string, message: string, param: string | null = null): EngineErrorBody {
  return { error: { message, type, param, code: status } };
}

/** The field a schema refusal is about: the path of its first issue, dotted (`messages.0.content`). */
export function paramOfIssues(issues: readonly z.core.$ZodIssue[]): string | null {
  const path = issues[0]?.path ?? [];
  return path.length === 0 ? null : path.map(String).join(".");
}
