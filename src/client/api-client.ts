import { userInfo } from "node:os";
import type { Dispatcher } from "undici";
import { isBadPortRefusal, requestAsResponse } from "./request-as-response.js";
import { readAll, type AdminCall, type AdminTransport } from "./admin-calls.js";
import type { AdminMethod } from "./admin-routes.js";
import { apiHeader, clientApiRange, formatApiRange, softwareVersion, userHeader, versionHeader } from "../protocol/light.js";
import type { DryRunAnswer } from "../protocol/index.js";

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

/** Loads the CA a server's certificate is checked against (--ca, LLMGW_CA); given only when one is set. */
export type CaLoader = () => Promise<Buffer | undefined>;

/** What fetch is given beyond the standard: undici's dispatcher, for a private CA or an answer with no time limit. */
type FetchWithDispatcher = (url: URL, init: Omit<RequestInit, "dispatcher"> & { dispatcher?: Dispatcher }) => Promise<Response>;

/**
 * The CLI's transport for the admin API (admin-calls.ts): the global fetch,
 * with ctl's identity headers, --dry-run, and errors read back into the
 * server's own message and hint. undici itself is loaded only when the
 * request needs what the global fetch cannot give (a private CA, a stream
 * with no time limit): it is most of a plain command's start otherwise.
 */
export class ApiClient implements AdminTransport {
  /** undici's fetch and its dispatchers (one for answers, one for streams), made on first need. */
  private undici: Promise<{ fetch: FetchWithDispatcher; answers: Dispatcher; streams: Dispatcher }> | undefined;

  constructor(
    readonly baseUrl: string,
    private readonly token: string | undefined,
    /** `--dry-run`: every change is sent with ?dry_run=true, and its answer ends the command (`DryRunAnswered`). */
    private readonly dryRun?: { readonly json: boolean },
    /** Verifies an HTTPS server against a private CA (--ca); undefined: the system's CAs. */
    private readonly loadCa?: CaLoader,
  ) {}

  send<T>(call: AdminCall<T>): Promise<T> {
    return this.call<T>(call.method, call.path, call.body);
  }

  /** A list in full, every page read (see readAll). */
  all<T extends { next_cursor?: string | null }, F extends keyof T & string>(first: AdminCall<T>, field: F): Promise<Omit<T, "next_cursor">> {
    return readAll(this, first, field);
  }

  /** A text body read as it arrives (`ctl logs --follow`, a backup); errors are thrown as by send(). */
  async stream(call: AdminCall<unknown>): Promise<AsyncIterable<Buffer>> {
    const response = await this.fetch(call.method, call.path, undefined, { stream: true });
    if (response.status >= 400) throw await errorFromAnswer(response.status, await response.text());
    const body = response.body;
    return (async function* () {
      if (body) for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) yield Buffer.from(chunk);
    })();
  }

  private async call<T>(method: AdminMethod, path: string, body?: unknown): Promise<T> {
    const dryRun = this.dryRun && method !== "GET" ? this.dryRun : undefined;
    // The same name as protocol/dry-run's dryRunParameter, written here: that module loads zod, which every ctl call would pay for at start.
    const sent = dryRun ? `${path}${path.includes("?") ? "&" : "?"}dry_run=true` : path;
    const response = await this.fetch(method, sent, body, { stream: false });
    const text = await response.text();
    if (response.status >= 400) throw await errorFromAnswer(response.status, text);
    const answer: unknown = text.length > 0 ? JSON.parse(text) : undefined;
    if (dryRun) {
      const { dryRunAnswerSchema } = await import("../protocol/index.js");
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
    const send = await this.fetcher(false);
    const response = await send(new URL("/v1/models", this.baseUrl), { method: "GET", signal: AbortSignal.timeout(10_000) });
    await response.body?.cancel();
    return response.status === 401;
  }

  /** Sends one request with the CLI's identity, and refuses an answer that is not from an llmgw server. */
  private async fetch(method: AdminMethod, path: string, body: unknown, how: { stream: boolean }): Promise<Response> {
    const headers: Record<string, string> = {
      [versionHeader]: softwareVersion,
      [apiHeader]: formatApiRange(clientApiRange),
      [userHeader]: localUser(),
      accept: "application/json",
    };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    if (body !== undefined) headers["content-type"] = "application/json";
    const send = await this.fetcher(how.stream);
    const url = new URL(path, this.baseUrl);
    const init: RequestInit = {
      method,
      headers,
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      // An answer in a minute, read whole; a stream (logs --follow) may stay quiet for as long as it likes.
      ...(how.stream ? {} : { signal: AbortSignal.timeout(60_000) }),
    };
    let response: Response;
    try {
      response = await send(url, init).catch(async (error: unknown) => {
        if (!isBadPortRefusal(error)) throw error;
        const undici = this.loadCa === undefined && !how.stream ? undefined : await this.undici;
        return await requestAsResponse(url, init, undici === undefined ? undefined : how.stream ? undici.streams : undici.answers);
      });
    } catch (error) {
      throw await explainedUnreachable(this.baseUrl, error);
    }
    if (response.headers.get(versionHeader) === null) {
      await response.body?.cancel();
      throw new RemoteError(
        "server_unreachable",
        `${this.baseUrl} answered, but not as an llmgw server (HTTP ${response.status}, no ${versionHeader} header)`,
        "Point --server or LLMGW_SERVER at the llmgw server's address.",
      );
    }
    return response;
  }

  /**
   * The global fetch, unless the request needs an undici dispatcher: a CA to
   * trust (the global fetch trusts the system's only), or a stream (the
   * global fetch ends a body quiet for five minutes). Called outside the
   * request's try: an unreadable CA file is its own error, not "unreachable".
   */
  private async fetcher(stream: boolean): Promise<(url: URL, init: RequestInit) => Promise<Response>> {
    if (this.loadCa === undefined && !stream) return fetch;
    this.undici ??= (async () => {
      const [{ fetch: undiciFetch, Agent }, { rootCertificates }, ca] = await Promise.all([import("undici"), import("node:tls"), this.loadCa?.()]);
      const connect = ca ? { connect: { ca: [...rootCertificates, ca.toString("utf8")] } } : {};
      return { fetch: undiciFetch as unknown as FetchWithDispatcher, answers: new Agent(connect), streams: new Agent({ ...connect, bodyTimeout: 0 }) };
    })();
    const undici = await this.undici;
    return (url, init) => undici.fetch(url, { ...init, dispatcher: stream ? undici.streams : undici.answers });
  }
}

/** The server's error body read back into a RemoteError; a body that is not ours still says what came back. */
async function errorFromAnswer(status: number, text: string): Promise<RemoteError> {
  // Loaded on an error only: its schema library is the slowest part of a ctl call's start.
  const { readErrorBody } = await import("../protocol/index.js");
  const body = readErrorBody(text);
  if (body) return new RemoteError(body.code ?? "internal", body.message, body.hint ?? "", body.details, status);
  return new RemoteError("internal", `the server answered HTTP ${status}: ${text.slice(0, 300)}`, "Check the server's log.", [], status);
}

/** A plain-HTTP connection closed at once may be a TLS port: asked, so the hint says https:// instead of "start it". */
async function explainedUnreachable(baseUrl: string, error: unknown): Promise<RemoteError> {
  const url = new URL(baseUrl);
  const code = (error as { code?: string }).code ?? ((error as { cause?: { code?: string } }).cause?.code);
  // Loaded on a failure only: node:tls is no part of a call that reaches its server.
  if (url.protocol === "http:" && (code === "UND_ERR_SOCKET" || code === "ECONNRESET") && (await (await import("./speaks-tls.js")).speaksTls(url))) {
    const secure = baseUrl.replace(/^http:/, "https:");
    return new RemoteError(
      "server_unreachable",
      `${baseUrl} speaks TLS: the server there serves HTTPS, and closed this plain-HTTP connection`,
      `Use https://: --server ${secure} (or LLMGW_SERVER=${secure}), with --ca FILE when a private CA signed its certificate.`,
    );
  }
  return await unreachable(baseUrl, error);
}

async function unreachable(baseUrl: string, error: unknown): Promise<RemoteError> {
  // Loaded on a failure only: it brings undici, which a command that reaches its server never needs.
  const { certificateFailure } = await import("../net/light.js");
  const certificate = certificateFailure(error);
  if (certificate) return new RemoteError("server_unreachable", `refused the server at ${baseUrl}: ${certificate.reason}`, certificate.hint);
  // fetch wraps the socket's error ("fetch failed", its cause the real one); a timeout is the abort signal's own error.
  const cause = (error as { cause?: unknown }).cause ?? error;
  const code = (error as Error).name === "TimeoutError" ? "UND_ERR_HEADERS_TIMEOUT" : ((cause as { code?: string }).code ?? (error as { code?: string }).code);
  const reason =
    code === "ECONNREFUSED"
      ? "connection refused: nothing is listening there"
      : code === "ENOTFOUND"
        ? "no such host"
        : code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_CONNECT_TIMEOUT"
          ? "no answer in time"
          : cause instanceof Error ? cause.message : String(cause);
  return new RemoteError(
    "server_unreachable",
    `could not reach the llmgw server at ${baseUrl} (${reason})`,
    "Start it with `llmgw server`, or point --server or LLMGW_SERVER at the address it listens on.",
  );
}
