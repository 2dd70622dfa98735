import { isRetryableStatus } from "../net/retryable-status.js";
import { request, type Dispatcher } from "undici";
import { certificateFailure } from "../net/tls-files.js";
import type { z } from "zod";
import { DomainError } from "../errors/domain-error.js";
import { readErrorBody } from "../protocol/error-body.js";
import {
  agentPaths,
  heartbeatResponseSchema,
  joinResponseSchema,
  protocolRefusal,
  serverIdentitySchema,
  protocolVersion,
  type HeartbeatRequest,
  type HeartbeatResponse,
  type JoinRequest,
  type JoinResponse,
  type ServerIdentity,
} from "../protocol/agent-protocol.js";

/** The server's own words, when it answered with an error body: its code, message and what to do. */
interface ServerWords {
  readonly message: string;
  /** The server's hint, kept apart so the agent can log it and stop with it. */
  readonly hint?: string | undefined;
  readonly code?: string | undefined;
}

/** What went wrong talking to the server, sorted by what the agent does next. */
export type ServerCallFailure =
  /** Connection refused, timeout, 5xx: keep every replica running and try again later. */
  | ({ readonly kind: "unreachable" } & ServerWords)
  /** The credential or join token was refused (401/403), or the node is unknown (404): join again, if a join token is at hand. */
  | ({ readonly kind: "refused"; readonly status: number } & ServerWords)
  /** The server speaks another protocol: nothing the agent can do but stop and say so. */
  | { readonly kind: "version"; readonly error: DomainError }
  /** Any other refusal (400: a message the server could not read; 409 name_taken: another agent has the name). */
  | ({ readonly kind: "rejected"; readonly status: number } & ServerWords);

export type ServerCallResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly failure: ServerCallFailure };


/** The server an agent joined: its URL, and how its certificate is verified when a private CA signed it. */
export interface ServerEndpoint {
  readonly url: string;
  readonly dispatcher?: Dispatcher | undefined;
}

async function call<T>(server: ServerEndpoint, path: string, body: unknown, credential: string | undefined, schema: z.ZodType<T>): Promise<ServerCallResult<T>> {
  const serverUrl = server.url;
  const url = new URL(path, serverUrl).toString();
  let statusCode: number;
  let text: string;
  try {
    const response = await request(url, {
      // Without a body, a GET: the identity, asked with no credential.
      ...(body === undefined ? { method: "GET" as const } : { method: "POST" as const, headers: { "content-type": "application/json", ...(credential ? { authorization: `Bearer ${credential}` } : {}) }, body: JSON.stringify(body) }),
      headersTimeout: 10_000,
      bodyTimeout: 10_000,
      signal: AbortSignal.timeout(15_000),
      ...(server.dispatcher ? { dispatcher: server.dispatcher } : {}),
    });
    statusCode = response.statusCode;
    text = await response.body.text();
  } catch (error) {
    // A certificate refused is kept retrying like an outage (the server's certificate may be renewed), with the fix in every line.
    const certificate = certificateFailure(error);
    if (certificate) return { ok: false, failure: { kind: "unreachable", message: `refused the server at ${url}: ${certificate.reason}`, hint: certificate.hint } };
    return { ok: false, failure: { kind: "unreachable", message: `could not reach the server at ${url}: ${(error as Error).message}` } };
  }
  const parts = readErrorBody(text);
  const serverMessage = parts?.message;
  const code = parts?.code;
  const words = { hint: parts?.hint, code };
  if (statusCode === 426 || (statusCode === 409 && code === "version_unsupported")) {
    return {
      ok: false,
      failure: {
        kind: "version",
        error: new DomainError(
          "version_unsupported",
          serverMessage ?? `the server at ${serverUrl} refused agent protocol ${protocolVersion} (answer ${statusCode})`,
          parts?.hint ?? "Run an agent of the same llmgw release as the server (npm install -g llmgw@<server version>).",
        ),
      },
    };
  }
  if (isRetryableStatus(statusCode)) {
    return { ok: false, failure: { kind: "unreachable", message: `the server at ${url} answered ${statusCode}${serverMessage ? `: ${serverMessage}` : ""}`, ...words } };
  }
  if (statusCode === 401 || statusCode === 403 || statusCode === 404) {
    return { ok: false, failure: { kind: "refused", status: statusCode, message: serverMessage ?? `the server at ${url} answered ${statusCode}`, ...words } };
  }
  if (statusCode !== 200 && statusCode !== 201) {
    return { ok: false, failure: { kind: "rejected", status: statusCode, message: serverMessage ?? `the server at ${url} answered ${statusCode}`, ...words } };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined; // refused below as not an agent protocol message
  }
  const refusal = protocolRefusal(parsed, { side: "agent", place: `answer of ${url}`, hint: "Run an agent of the same llmgw release as the server." });
  if (refusal) return { ok: false, failure: { kind: "version", error: refusal } };
  const result = schema.safeParse(parsed);
  if (!result.success) {
    return { ok: false, failure: { kind: "rejected", status: statusCode, message: `the server's answer at ${url} is not an agent protocol ${protocolVersion} message: ${result.error.message}` } };
  }
  return { ok: true, value: result.data };
}

export async function postJoin(server: ServerEndpoint, body: JoinRequest): Promise<ServerCallResult<JoinResponse>> {
  return await call(server, agentPaths.join, body, undefined, joinResponseSchema);
}

export async function postHeartbeat(server: ServerEndpoint, credential: string, body: HeartbeatRequest): Promise<ServerCallResult<HeartbeatResponse>> {
  return await call(server, agentPaths.heartbeat, body, credential, heartbeatResponseSchema);
}

/** The server's identity, asked with no credential: a server of an earlier release answers 404 (a "refused" failure). */
export async function getServerIdentity(server: ServerEndpoint): Promise<ServerCallResult<ServerIdentity>> {
  return await call(server, agentPaths.identity, undefined, undefined, serverIdentitySchema);
}
