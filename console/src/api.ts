/**
 * How the console sends the admin API's calls (built by the shared client in
 * src/client, the same one ctl uses) and reads the gateway's errors: the
 * token as a bearer header, and an error body read back into the server's own
 * message, details and hint, shown as they are.
 */
import type { AdminCall } from "../../src/client/admin-calls.ts";
import { currentToken } from "./token.ts";

export { admin, type AdminCall } from "../../src/client/admin-calls.ts";

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

/**
 * Sends one call of the shared admin client (src/client/admin-calls.ts);
 * `dryRun` asks the server to check the change and say what it would do,
 * writing nothing.
 */
export async function send<T>(call: AdminCall<T>, options: { dryRun?: boolean } = {}): Promise<T> {
  const response = await open(call, options.dryRun ? { dryRun: true } : {});
  if (response.status === 204) return undefined as T;
  const type = response.headers.get("content-type") ?? "";
  return (type.includes("json") ? await response.json() : await response.text()) as T;
}

/** A call's answer as it arrives (a log, the live stream, a backup file); a refusal is thrown as an ApiError. */
export async function open(call: AdminCall<unknown>, options: { dryRun?: boolean; signal?: AbortSignal; accept?: string } = {}): Promise<Response> {
  const headers: Record<string, string> = { ...authHeaders(), ...(options.accept ? { accept: options.accept } : {}) };
  if (call.body !== undefined) headers["content-type"] = "application/json";
  const path = options.dryRun ? `${call.path}${call.path.includes("?") ? "&" : "?"}dry_run=true` : call.path;
  const response = await fetch(path, {
    method: call.method,
    headers,
    ...(call.body !== undefined ? { body: JSON.stringify(call.body) } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  if (!response.ok) throw await errorFromResponse(response);
  return response;
}
