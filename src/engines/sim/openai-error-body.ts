import type { z } from "zod";

export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: number };
}

/** OpenAI's error shape; `param` names the body field that was wrong, as clients read it. */
export function errorBody(status: number, type: string, message: string, param: string | null = null): OpenAIErrorBody {
  return { error: { message, type, param, code: status } };
}

/** The field a schema refusal is about: the path of its first issue, dotted (`messages.0.content`). */
export function paramOfIssues(issues: readonly z.core.$ZodIssue[]): string | null {
  const path = issues[0]?.path ?? [];
  return path.length === 0 ? null : path.map(String).join(".");
}
