import { userInfo } from "node:os";
import { errors as undiciErrors, request, type Dispatcher } from "undici";
import { certificateFailure } from "../net/tls-files.js";
import { speaksTls } from "./speaks-tls.js";
import { apiHeader, clientApiRange, formatApiRange, softwareVersion, userHeader, versionHeader } from "../protocol/api-version.js";
import type { DryRunAnswer } from "../protocol/dry-run.js";

/**
 * Thrown by the API client when a dry run's change request was answered: the
 * command ends there, printing the answer, so none of its later steps (a
 * --wait, a second change built on the first) runs against a state that was
 * never made.
 */
export class DryRunAnswered extends Error {
  constructor(
    readonly answer: DryRunAnswer,
    readonly json: boolean,
  ) {
    super("dry run answered");
  }
}

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
    /** `--dry-run`: every change is sent with ?dry_run=true, and its answer ends the command (`DryRunAnswered`). */
    private readonly dryRun?: { readonly json: boolean },
    /** Verifies an HTTPS server against a private CA (--ca); undefined: the system's CAs. */
    private readonly dispatcher?: Dispatcher | undefined,
  ) {}

  get<T>(path: string): Promise<T> {
    return this.call<T>("GET", path);
  }

  /**
   * A list in full: while an answer carries a `next_cursor` (a paged list),
   * the next page is read after it and its items added. The lists answer
   * whole when no `limit` is given, so this is one request today; it keeps
   * ctl printing everything should a server page by default.
   */
  async getAll<T extends object>(path: string, field: keyof T & string): Promise<T> {
    const first = await this.get<T & { next_cursor?: string | null }>(path);
    const items = [...((first as Record<string, unknown>)[field] as unknown[])];
    let cursor = first.next_cursor ?? null;
    for (const seen = new Set<string>(); cursor !== null && !seen.has(cursor); ) {
      // A server repeating a cursor would page forever; the set ends that.
      seen.add(cursor);
      const url = new URL(path, "http://list");
      url.searchParams.set("cursor", cursor);
      const page = await this.get<T & { next_cursor?: string | null }>(`${url.pathname}${url.search}`);
      items.push(...((page as Record<string, unknown>)[field] as unknown[]));
      cursor = page.next_cursor ?? null;
    }
    const { next_cursor: _cursor, ...rest } = first as T & { next_cursor?: string | null };
    return { ...rest, [field]: items } as T;
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
    if (response.statusCode >= 400) throw await errorFromAnswer(response.statusCode, await response.body.text());
    return response.body;
  }

  async call<T>(method: "GET" | "POST" | "DELETE", path: string, body?: unknown): Promise<T> {
    const dryRun = this.dryRun && method !== "GET" ? this.dryRun : undefined;
    // The same name as protocol/dry-run's dryRunParameter, written here: that module loads zod, which every ctl call would pay for at start.
    const sent = dryRun ? `${path}${path.includes("?") ? "&" : "?"}dry_run=true` : path;
    const response = await this.send(method, sent, body, 60_000);
    const text = await response.body.text();
    if (response.statusCode >= 400) throw await errorFromAnswer(response.statusCode, text);
    const answer: unknown = text.length > 0 ? JSON.parse(text) : undefined;
    if (dryRun) {
      const { dryRunAnswerSchema } = await import("../protocol/dry-run.js");
      const parsed = dryRunAnswerSchema.safeParse(answer);
      if (!parsed.success) {
        throw new RemoteError("internal", `${method} ${path} was sent as a dry run, and the server answered something else`, "Upgrade the server to one that knows ?dry_run; nothing is known of what changed, so check with `llmgw ctl audit`.");
      }
      throw new DryRunAnswered(parsed.data, dryRun.json);
    }
    return answer as T;
  }

  /** Whether the server's gateway wants a key: /v1/models asked without one is refused. */
  async gatewayChecksKeys(): Promise<boolean> {
    const response = await request(new URL("/v1/models", this.baseUrl), { method: "GET", headersTimeout: 10_000, ...(this.dispatcher ? { dispatcher: this.dispatcher } : {}) });
    await response.body.dump();
    return response.statusCode === 401;
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
        ...(this.dispatcher ? { dispatcher: this.dispatcher } : {}),
      });
    } catch (error) {
      throw await explainedUnreachable(this.baseUrl, error);
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
async function errorFromAnswer(status: number, text: string): Promise<RemoteError> {
  // Loaded on an error only: its schema library is the slowest part of a ctl call's start.
  const { readErrorBody } = await import("../protocol/error-body.js");
  const body = readErrorBody(text);
  if (body) return new RemoteError(body.code ?? "internal", body.message, body.hint ?? "", body.details, status);
  return new RemoteError("internal", `the server answered HTTP ${status}: ${text.slice(0, 300)}`, "Check the server's log.", [], status);
}

/** A plain-HTTP connection closed at once may be a TLS port: asked, so the hint says https:// instead of "start it". */
async function explainedUnreachable(baseUrl: string, error: unknown): Promise<RemoteError> {
  const url = new URL(baseUrl);
  const code = (error as { code?: string }).code ?? ((error as { cause?: { code?: string } }).cause?.code);
  if (url.protocol === "http:" && (code === "UND_ERR_SOCKET" || code === "ECONNRESET") && (await speaksTls(url))) {
    const secure = baseUrl.replace(/^http:/, "https:");
    return new RemoteError(
      "server_unreachable",
      `${baseUrl} speaks TLS: the server there serves HTTPS, and closed this plain-HTTP connection`,
      `Use https://: --server ${secure} (or LLMGW_SERVER=${secure}), with --ca FILE when a private CA signed its certificate.`,
    );
  }
  return unreachable(baseUrl, error);
}

function unreachable(baseUrl: string, error: unknown): RemoteError {
  const certificate = certificateFailure(error);
  if (certificate) return new RemoteError("server_unreachable", `refused the server at ${baseUrl}: ${certificate.reason}`, certificate.hint);
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
