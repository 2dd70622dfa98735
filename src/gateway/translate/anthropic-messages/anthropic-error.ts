/**
 * Errors in Anthropic's shape, `{type: "error", error: {type, message}}`,
 * with the type its clients map to their error classes by status.
 */
export function anthropicErrorType(status: number): string {
  if (status === 400) return "invalid_request_error";
  if (status === 401) return "authentication_error";
  if (status === 402) return "billing_error";
  if (status === 403) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 413) return "request_too_large";
  if (status === 429) return "rate_limit_error";
  if (status === 503 || status === 529) return "overloaded_error";
  if (status >= 500) return "api_error";
  return "invalid_request_error";
}

export interface AnthropicErrorBody {
  readonly type: "error";
  readonly error: { readonly type: string; readonly message: string };
}

/** An answer in OpenAI's error shape (the gateway's own, or an engine's as the gateway rewrote it) in Anthropic's; its code leads the message. */
export function anthropicErrorFromOpenAI(status: number, text: string): AnthropicErrorBody {
  let message = text.trim() || `the gateway answered ${status}`;
  try {
    const body = JSON.parse(text) as { error?: { message?: unknown; code?: unknown } };
    if (typeof body.error?.message === "string") message = typeof body.error.code === "string" ? `${body.error.code}: ${body.error.message}` : body.error.message;
  } catch {
    // Not JSON: its text is the message.
  }
  return { type: "error", error: { type: anthropicErrorType(status), message } };
}
