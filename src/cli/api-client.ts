import { userInfo } from "node:os";
import { errors as undiciErrors, request } from "undici";
import { apiHeader, clientApiRange, formatApiRange, softwareVersion, versionHeader } from "../protocol/api-version.js";
import { userHeader } from "../api/access.js";
import { readErrorBody } from "../protocol/error-body.js";

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
    const response = await this.send("GET", path, undefined, 0);
    if (response.statusCode >= 400) throw errorFromAnswer(response.statusCode, await response.body.text());
    return response.body;
  }

  async call<T>(method: "GET" | "POST" | "DELETE", path: string, body?: unknown): Promise<T> {
    const response = await this.send(method, path, body, 60_000);
    const text = await response.body.text();
    if (response.statusCode >= 400) throw errorFromAnswer(response.statusCode, text);
    return (text.length > 0 ? JSON.parse(text) : undefined) as T;
  }

  /** Sends one request with the CLI's identity, and refuses an answer that is not from an llmgw server. */
  private async send(method: "GET" | "POST" | "DELETE", path: string, body: unknown, bodyTimeout: number) {
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
      response = await request(new URL(path, this.baseUrl), {
        method,
        headers,
        body: body === undefined ? null : JSON.stringify(body),
        headersTimeout: 60_000,
        bodyTimeout,
      });
    } catch (error) {
      throw unreachable(this.baseUrl, error);
    }
    if (response.headers[versionHeader] === undefined) {
      await response.body.dump();
      throw new RemoteError(
        "server_unreachable",
        `${this.baseUrl} answered, but not as an llmgw server (HTTP ${response.statusCode}, no ${versionHeader} header)`,
        "Point --server or LLMGW_SERVER at the llmgw server's address.",
      );
    }
    return response;
  }
}

/** The server's error body read back into a RemoteError; a body that is not ours still says what came back. */
function errorFromAnswer(status: number, text: string): RemoteError {
  const body = readErrorBody(text);
  if (body) return new RemoteError(body.code ?? "internal", body.message, body.hint ?? "", body.details, status);
  return new RemoteError("internal", `the server answered HTTP ${status}: ${text.slice(0, 300)}`, "Check the server's log.", [], status);
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
