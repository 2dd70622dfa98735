import type { OpenAIErrorBody } from "./openai-error-body.js";

/** OpenAI's error types; an engine's own (vLLM's "BadRequestError", a bare number) gives way to the one its status implies. */
const openAITypes = new Set(["invalid_request_error", "authentication_error", "permission_error", "not_found_error", "rate_limit_error", "server_error"]);

function typeForStatus(status: number): string {
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 429) return "rate_limit_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

const textOf = (value: unknown): string | undefined => (typeof value === "string" && value.length > 0 ? value : undefined);

/**
 * An engine's refusal (a 4xx) as OpenAI's error body, whatever the engine
 * wrote: vLLM's `{"object":"error","message":...,"type":"BadRequestError","code":400}`,
 * llama-server's `{"error":{"code":400,"message":...,"type":...}}`, a bare
 * `{"detail":...}` or `{"message":...}`, plain text, or nothing. The message
 * is the engine's (it says what was wrong with the request), with the
 * request id to find it in the gateway's log; code and param are kept only
 * when they are the strings OpenAI's clients expect.
 */
export function engineRefusalBody(status: number, text: string, engine: string, requestId: string): OpenAIErrorBody {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const outer = parsed !== null && typeof parsed === "object" ? (parsed as Record<string, unknown>) : {};
  const inner = outer.error !== null && typeof outer.error === "object" ? (outer.error as Record<string, unknown>) : outer;
  const detail = Array.isArray(inner.detail) ? JSON.stringify(inner.detail) : inner.detail;
  const said = textOf(inner.message) ?? textOf(detail) ?? textOf(typeof outer.error === "string" ? outer.error : undefined) ?? (parsed === undefined ? textOf(text.trim().slice(0, 1000)) : undefined);
  const type = textOf(inner.type);
  return {
    error: {
      message: `${said ?? `the engine refused the request (status ${status}) without saying why`} (${engine}; request id ${requestId})`,
      type: type !== undefined && openAITypes.has(type) ? type : typeForStatus(status),
      param: textOf(inner.param) ?? null,
      code: textOf(inner.code) ?? "engine_refused",
    },
  };
}
