import type { Socket } from "node:net";
import { STATUS_CODES, type IncomingMessage } from "node:http";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { statusForCode, softwareVersion, versionHeader } from "../protocol/for-agent.js";
import { DomainError, isDomainError } from "../errors/light.js";
import { redactUrl, defaultServerLimits, formatBytes } from "../catalog/for-agent.js";

export interface ErrorHandlingOptions {
  /** Who answers, put before messages the framework makes ("agent gpu-1"); the admin API leaves it out. */
  readonly speaker?: string;
  /** Where the routes are listed, told to a caller who asked for one that does not exist. */
  readonly routesHint: string;
  /** Where a caller looks when the server failed on its own. */
  readonly logHint: string;
}

const adminApiErrors: ErrorHandlingOptions = {
  routesHint: "See docs/admin-api.md (or GET /api/v1/openapi.json) for the routes; a newer server may have this route.",
  logHint: "The server log has the details; retry, and report it if it persists.",
};

/**
 * One mapping from errors to HTTP for every llmgw server (admin API and the
 * agent's control API): each answers the same `{error:{code,message,hint}}`
 * body with the status from the one table, so a client reads both alike.
 */
export function installErrorHandling(app: FastifyInstance, options: ErrorHandlingOptions = adminApiErrors): void {
  const prefix = options.speaker === undefined ? "" : `${options.speaker}: `;
  // The app's own limit (server.yaml's limits.body_bytes for the admin API, the agent's own): the 413 states the one in force.
  const bodyLimit = app.initialConfig.bodyLimit ?? defaultServerLimits.adminBodyBytes;
  app.setErrorHandler(async (error: FastifyError | DomainError | Error, request, reply) => {
    const domainError = toDomainError(error, prefix, options.logHint, bodyLimit);
    if (domainError.code === "internal") request.log.error({ err: error }, "request failed");
    if (domainError.code === "body_too_large") await discardRestOfBody(request.raw);
    return reply.status(statusForCode[domainError.code]).send(shownBody(domainError));
  });
  app.setNotFoundHandler((request, reply) => {
    const where = options.speaker === undefined ? "no API route" : `${options.speaker} has no route`;
    const error = new DomainError("route_not_found", `${where} at ${request.method} ${request.url.split("?")[0]}`, options.routesHint);
    void reply.status(404).send(shownBody(error));
  });
}

/**
 * An error as it may be shown to any caller: a message can quote a source or
 * a database URL, and its password is masked on the way out whoever asks.
 */
function shownBody(error: DomainError): ReturnType<DomainError["toBody"]> {
  const body = error.toBody();
  return {
    error: {
      ...body.error,
      message: redactUrl(body.error.message),
      hint: redactUrl(body.error.hint),
      ...(body.error.details ? { details: body.error.details.map((detail) => ({ where: detail.where, message: redactUrl(detail.message) })) } : {}),
    },
  };
}

/**
 * Refusals the router makes before any hook runs (fastify's frameworkErrors
 * option): a path with a bad percent-escape, or a path segment past the
 * router's length limit. Without this they answer fastify's own body and no
 * version header, which the CLI cannot read.
 */
export function answerFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const path = request.raw.url?.split("?")[0] ?? "";
  let domainError: DomainError;
  if (error.code === "FST_ERR_BAD_URL") {
    domainError = new DomainError(
      "invalid_input",
      `path ${truncate(path)} is not a valid URL: it holds a % that does not start an escape like %2F`,
      "Encode names in paths with encodeURIComponent (a / becomes %2F, a % becomes %25).",
    );
  } else if (error.code === "FST_ERR_MAX_PARAM_LENGTH") {
    domainError = segmentTooLong(path);
  } else {
    domainError = toDomainError(error);
  }
  void reply.header(versionHeader, softwareVersion).status(statusForCode[domainError.code]).send(shownBody(domainError));
}

/**
 * A path with a segment past the router's limit. The router says so for a
 * route with a parameter; a wildcard route (the console's pages) would take
 * the path instead, so it asks the same question of paths under /api.
 */
export function segmentTooLong(path: string): DomainError {
  return new DomainError(
    "uri_too_long",
    `path ${truncate(path)} has a segment longer than any name or id the API accepts`,
    "Check the name: model names are at most 128 characters, node names 63, replica ids 128.",
  );
}

/**
 * What Node's HTTP parser refuses before fastify sees a request (fastify's
 * clientErrorHandler option): headers over Node's limit, a malformed request
 * line or chunked body, a client too slow to send. The answer is written to
 * the socket by hand (there is no request object yet), in the same body shape
 * and with the version header, and the connection is then closed, since the
 * parser cannot find the start of the next request. `headerBytes` is the
 * server's maxHeaderSize, stated in the 431.
 */
export function clientErrorAnswerer(headerBytes: number): (error: NodeJS.ErrnoException, socket: Socket) => void {
  return (error, socket) => answerClientErrorWith(error, socket, headerBytes);
}

/** clientErrorAnswerer for a server with node's own head limit. */
export function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  answerClientErrorWith(error, socket, defaultServerLimits.headerBytes);
}

function answerClientErrorWith(error: NodeJS.ErrnoException, socket: Socket, headerBytes: number): void {
  if (error.code === "ECONNRESET" || socket.destroyed) return;
  const domainError = clientErrorAsDomainError(error, headerBytes);
  const status = statusForCode[domainError.code];
  const body = JSON.stringify(domainError.toBody());
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? "Error"}\r\n` +
        `${versionHeader}: ${softwareVersion}\r\ncontent-type: application/json; charset=utf-8\r\n` +
        `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

function clientErrorAsDomainError(error: NodeJS.ErrnoException, headerBytes: number): DomainError {
  if (error.code === "HPE_HEADER_OVERFLOW") {
    return new DomainError(
      "headers_too_large",
      `the request line and headers are longer than the server reads (${formatBytes(headerBytes)} together)`,
      "Send shorter headers and a shorter path; names and ids are at most 128 characters. The operator sets the limit as limits.header_bytes in server.yaml (--header-bytes for llmgw gateway).",
    );
  }
  if (error.code === "ERR_HTTP_REQUEST_TIMEOUT") {
    return new DomainError("request_timeout", "the request was not received in full in time", "Retry; check the network between the client and the server.");
  }
  return new DomainError(
    "invalid_input",
    `the request is not well-formed HTTP/1.1 (${error.code ?? "parse error"}: ${error.message})`,
    "Use an HTTP client library, or check the request line, headers and chunked body your client sends.",
  );
}

function toDomainError(error: FastifyError | DomainError | Error, prefix = "", logHint = adminApiErrors.logHint, bodyLimit = defaultServerLimits.adminBodyBytes): DomainError {
  if (isDomainError(error)) return error;
  const fastifyError = error as FastifyError;
  if (fastifyError.code === "FST_ERR_CTP_BODY_TOO_LARGE") {
    return new DomainError(
      "body_too_large",
      `${prefix}request: the body is larger than the server accepts (${formatBytes(bodyLimit)})`,
      // Only the admin API's limit is the operator's to set; an agent's is its own.
      `Send a smaller body: one model entry per request.${prefix === "" ? " The operator sets the limit as limits.body_bytes in server.yaml." : ""}`,
    );
  }
  const status = fastifyError.statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    // Fastify's own refusals (a body that is not JSON, a wrong content type).
    return new DomainError("invalid_input", `${prefix}request: ${error.message}`, "Send a JSON body with content-type: application/json.");
  }
  return new DomainError("internal", `${prefix === "" ? "the server " : prefix}failed while handling this request`, logHint);
}

/** How much of an oversized body is read and thrown away so its sender can read the 413; past this, the connection is cut. */
const discardLimitBytes = 64 * 1024 * 1024;
const discardTimeoutMs = 10_000;

/**
 * Fastify refuses an oversized body as soon as it knows (often from
 * content-length, before reading a byte) and closes the connection; a client
 * still writing its body then gets EPIPE or a reset instead of the answer. The
 * rest of the body is read and dropped first (bounded in bytes and time), so
 * the client finishes writing and reads the 413.
 */
function discardRestOfBody(body: IncomingMessage): Promise<void> {
  if (body.complete || body.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    let discarded = 0;
    const finish = () => {
      clearTimeout(timer);
      body.removeListener("data", onData);
      body.removeListener("end", finish);
      body.removeListener("close", finish);
      body.removeListener("error", finish);
      resolve();
    };
    const onData = (chunk: Buffer) => {
      discarded += chunk.length;
      if (discarded > discardLimitBytes) finish();
    };
    const timer = setTimeout(finish, discardTimeoutMs);
    body.on("data", onData);
    body.on("end", finish);
    body.on("close", finish);
    body.on("error", finish);
    body.resume();
  });
}

function truncate(text: string): string {
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}
