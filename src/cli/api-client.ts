import { userInfo } from "node:os";
import { errors as undiciErrors, request } from "undici";
import { z } from "zod";
import { apiHeader, clientApiRange, formatApiRange, softwareVersion, versionHeader } from "../api/version.js";
import { userHeader } from "../api/access.js";

/**
 * An error the server answered with, read back from its JSON body. Kept apart
 * from DomainError because a newer server may send codes this CLI does not
 * know; they are printed all the same.
 */
export class RemoteError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly hint: string,
    readonly details: readonly { where: string; message: string }[] = [],
    readonly status = 0,
  ) {
    super(message);
    this.name = "RemoteError";
  }
}

// Lenient on what comes back (STYLE 4): keep what we print.
const errorBodySchema = z.object({
  error: z.object({
    code: z.string(),
    message: z.string(),
    hint: z.string().optional(),
    details: z.array(z.object({ where: z.string(), message: z.string() })).optional(),
  }),
});

/** The person at the terminal: the sudo user rather than root, so the audit names who really ran it. */
export function localUser(): string {
  const sudoUser = process.env.SUDO_USER;
  if (process.getuid?.() === 0 && sudoUser) return sudoUser;
  try {
    return userInfo().username;
  } catch {
    return "unknown";
  }
}

export class ApiClient {
  constructor(
    readonly baseUrl: string,
    private readonly token: string | undefined,
  ) {}

  get<T>(path: string): Promise<T> {
    return this.call<T>("GET", path);
  }

  post<T>(path: string, body: unknown): Promise<T> {
    return this.call<T>("POST", path, body);
  }

  delete<T>(path: string): Promise<T> {
    return this.call<T>("DELETE", path);
  }

  /** A text body read as it arrives (`ctl logs --follow`); errors are thrown as by call(). */
  async stream(path: string): Promise<AsyncIterable<Buffer>> {
    let response;
    try {
      response = await request(new URL(path, this.baseUrl), { method: "GET", headers: this.headers(false), headersTimeout: 60_000, bodyTimeout: 0 });
    } catch (error) {
      throw unreachable(this.baseUrl, error);
    }
    if (response.statusCode >= 400) {
      const text = await response.body.text();
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      const errorBody = errorBodySchema.safeParse(parsed);
      if (errorBody.success) {
        const { code, message, hint, details } = errorBody.data.error;
        throw new RemoteError(code, message, hint ?? "", details ?? [], response.statusCode);
      }
      throw new RemoteError("internal", `the server answered HTTP ${response.statusCode}: ${text.slice(0, 300)}`, "Check the server's log.", [], response.statusCode);
    }
    return response.body;
  }

  private headers(withBody: boolean): Record<string, string> {
    const headers: Record<string, string> = {
      [versionHeader]: softwareVersion,
      [apiHeader]: formatApiRange(clientApiRange),
      [userHeader]: localUser(),
      accept: "application/json",
    };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    if (withBody) headers["content-type"] = "application/json";
    return headers;
  }

  async call<T>(method: "GET" | "POST" | "DELETE", path: string, body?: unknown): Promise<T> {
    const url = new URL(path, this.baseUrl);
    const headers: Record<string, string> = {
      [versionHeader]: softwareVersion,
      [apiHeader]: formatApiRange(clientApiRange),
      [userHeader]: localUser(),
      accept: "application/json",
    };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    if (body !== undefined) headers["content-type"] = "application/json";
    let response;
    try {
      response = await request(url, { method, headers, body: body === undefined ? null : JSON.stringify(body), headersTimeout: 60_000, bodyTimeout: 60_000 });
    } catch (error) {
      throw unreachable(this.baseUrl, error);
    }
    const text = await response.body.text();
    if (response.headers[versionHeader] === undefined) {
      throw new RemoteError(
        "server_unreachable",
        `${this.baseUrl} answered, but not as an llmgw server (HTTP ${response.statusCode}, no ${versionHeader} header)`,
        "Point --server or LLMGW_SERVER at the llmgw server's address.",
      );
    }
    let parsed: unknown;
    try {
      parsed = text.length > 0 ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    if (response.statusCode >= 400) {
      const errorBody = errorBodySchema.safeParse(parsed);
      if (errorBody.success) {
        const { code, message, hint, details } = errorBody.data.error;
        throw new RemoteError(code, message, hint ?? "", details ?? [], response.statusCode);
      }
      throw new RemoteError("internal", `the server answered HTTP ${response.statusCode}: ${text.slice(0, 300)}`, "Check the server's log.", [], response.statusCode);
    }
    return parsed as T;
  }
}

function unreachable(baseUrl: string, error: unknown): RemoteError {
  const cause = error instanceof undiciErrors.UndiciError ? error : ((error as { cause?: unknown }).cause ?? error);
  const code = (cause as { code?: string }).code ?? (error as { code?: string }).code;
  const reason =
    code === "ECONNREFUSED"
      ? "connection refused: nothing is listening there"
      : code === "ENOTFOUND"
        ? "no such host"
        : code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_CONNECT_TIMEOUT"
          ? "no answer in time"
          : (cause as Error).message ?? String(cause);
  return new RemoteError(
    "server_unreachable",
    `could not reach the llmgw server at ${baseUrl} (${reason})`,
    "Start it with `llmgw server`, or point --server or LLMGW_SERVER at the address it listens on.",
  );
}
