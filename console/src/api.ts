/**
 * Every call the console makes to the admin API and the gateway: the token
 * as a bearer header, and an error body read back into the server's own
 * message, details and hint, shown as they are.
 */
import { currentToken } from "./token.ts";

export interface ErrorDetail {
  readonly where: string;
  readonly message: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code: string | undefined,
    readonly hint: string | undefined,
    readonly details: readonly ErrorDetail[],
  ) {
    super(message);
  }
}

interface CallOptions {
  readonly method?: "GET" | "POST" | "DELETE" | "PUT";
  readonly body?: unknown;
  readonly signal?: AbortSignal;
  readonly query?: Record<string, string | number | boolean | undefined>;
}

export function withQuery(path: string, query: CallOptions["query"]): string {
  if (!query) return path;
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value !== undefined && value !== "") params.set(key, String(value));
  const text = params.toString();
  return text ? `${path}${path.includes("?") ? "&" : "?"}${text}` : path;
}

export function authHeaders(): Record<string, string> {
  const token = currentToken();
  return token ? { authorization: `Bearer ${token}` } : {};
}

/** Reads an error body the way the CLI does; a body that is not one (a proxy's page) keeps its status line. */
export async function errorFromResponse(response: Response): Promise<ApiError> {
  const text = await response.text();
  try {
    const parsed = JSON.parse(text) as { error?: { code?: string; message?: string; hint?: string; details?: ErrorDetail[] } };
    if (parsed.error && typeof parsed.error.message === "string") {
      return new ApiError(response.status, parsed.error.message, parsed.error.code, parsed.error.hint, parsed.error.details ?? []);
    }
  } catch {
    // Not JSON: fall through to the status line.
  }
  return new ApiError(response.status, `${response.status} ${response.statusText}${text ? `: ${text.slice(0, 300)}` : ""}`, undefined, undefined, []);
}

export async function api<T>(path: string, options: CallOptions = {}): Promise<T> {
  const headers: Record<string, string> = { ...authHeaders() };
  if (options.body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(withQuery(path, options.query), {
    method: options.method ?? "GET",
    headers,
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  if (!response.ok) throw await errorFromResponse(response);
  if (response.status === 204) return undefined as T;
  const type = response.headers.get("content-type") ?? "";
  return (type.includes("json") ? await response.json() : await response.text()) as T;
}
