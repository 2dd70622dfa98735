import type { IncomingMessage, ServerResponse } from "node:http";
import { DomainError } from "../../errors/domain-error.js";
import type { Gateway } from "../request/gateway.js";
import type { GatewayLog } from "../wire/gateway-exchange.js";
import { openAIErrorAnswer } from "../wire/openai-error-body.js";
import { requestIdFrom } from "./request-id-from.js";
import { v1PostRoutes } from "./v1-routes.js";
import { writeOpenAIError } from "../wire/write-openai-error.js";
import { authorizationOf } from "../wire/authorization-of.js";
import type { V1Response } from "../wire/v1-response.js";
import { answerMessages, answerResponses } from "../translate/answer-translated.js";
import { TranslatingResponse } from "../translate/translating-response.js";
import { anthropicErrorsOnly } from "../translate/anthropic-messages/messages-translator.js";
import { anthropicModel, anthropicModelList } from "../translate/anthropic-messages/anthropic-models.js";
import { comfyRouteFor } from "../comfy/comfy-route.js";
import { defaultServerLimits, formatBytes } from "../../catalog/server-limits.js";

/** What the 404 for any other /v1 path names: everything this gateway serves there, in the table's order. */
const servedRoutes = `GET /v1/models, /v1/models/MODEL and POST ${[...v1PostRoutes.keys(), "/v1/images/generations", "/v1/llmgw/comfy/MODEL"].join(", ")}`;

/**
 * Answers /v1 and everything under it straight from node:http, before any
 * web framework sees the request: this is the path every client takes on
 * every call, and a framework's routing, hooks and reply objects cost more
 * than the proxying itself. Returns false for any other path, which the
 * caller hands on (to the admin API's app).
 *
 * `log` writes a warning about one request; the request id is added to it.
 * A body past `bodyBytes` (limits.body_bytes) is answered 413.
 */
export function answerV1Request(gateway: Gateway, request: IncomingMessage, response: ServerResponse, log: GatewayLog, bodyBytes = defaultServerLimits.bodyBytes): boolean {
  const url = request.url ?? "/";
  if (!url.startsWith("/v1") || (url.length > 3 && url[3] !== "/" && url[3] !== "?")) return false;
  const id = requestIdFrom(request.headers["x-request-id"]);
  const queryAt = url.indexOf("?");
  let path = queryAt < 0 ? url : url.slice(0, queryAt);
  // The admin API ignores a trailing slash; /v1 does the same, so both read alike.
  if (path.length > 1 && path.endsWith("/")) path = path.slice(0, -1);
  const requestLog: GatewayLog = { warn: (facts, message) => log.warn({ reqId: id, ...facts }, message) };
  const route = request.method === "POST" ? v1PostRoutes.get(path) : undefined;
  if (route?.kind === "proxied") {
    const endpoint = route.endpoint;
    readBody(request, bodyBytes, (body) => {
      if (body === "too-large") return answerTooLarge(response, id, bodyBytes);
      void gateway.handle(endpoint, { id, headers: request.headers, body, response, log: requestLog });
    });
    return true;
  }
  if (route?.kind === "translated") {
    const translated = route.translation;
    readBody(request, bodyBytes, (body) => {
      const exchange = { id, headers: request.headers, body: body === "too-large" ? Buffer.alloc(0) : body, response, log: requestLog };
      if (body === "too-large") answerTooLarge(translated === "responses" ? response : new TranslatingResponse(response, anthropicErrorsOnly), id, bodyBytes);
      else if (translated === "responses") answerResponses(gateway, exchange);
      else answerMessages(gateway, exchange, translated === "count_tokens");
    });
    return true;
  }
  const comfyRoute = comfyRouteFor(request.method, path);
  if (comfyRoute !== undefined) {
    // Kept images' URLs point back at the address the client used.
    const baseUrl = `${"encrypted" in request.socket && request.socket.encrypted ? "https" : "http"}://${request.headers.host ?? "localhost"}`;
    readBody(request, bodyBytes, (body) => {
      if (body === "too-large") return answerTooLarge(response, id, bodyBytes);
      void gateway.comfy.handle(comfyRoute, { id, headers: request.headers, body, response, log: requestLog, baseUrl });
    });
    return true;
  }
  if (request.method === "GET" && (path === "/v1/models" || path.startsWith("/v1/models/"))) {
    answerModels(gateway, request, response, id, path === "/v1/models" ? undefined : path.slice("/v1/models/".length));
    return true;
  }
  const notFound = new DomainError(
    "route_not_found",
    `no OpenAI route at ${request.method ?? "?"} ${path} here; this gateway serves ${servedRoutes}`,
    "Point the OpenAI client's base URL at this server's /v1.",
  );
  // A body sent to a wrong route is read and dropped, so the client can read the answer.
  request.resume();
  writeOpenAIError(response, id, openAIErrorAnswer(notFound, id));
  return true;
}

/**
 * GET /v1/models, or one model of it by its id (which may hold slashes:
 * org/name). Anthropic's clients, which send anthropic-version on every
 * call, get Anthropic's shapes (its model objects, its error body).
 */
function answerModels(gateway: Gateway, request: IncomingMessage, response: ServerResponse, id: string, model: string | undefined): void {
  const anthropic = request.headers["anthropic-version"] !== undefined;
  let text: string;
  try {
    const authorization = authorizationOf(request.headers);
    if (model === undefined) {
      const list = gateway.listModels(authorization);
      text = JSON.stringify(anthropic ? anthropicModelList(list.data) : list);
    } else {
      const found = gateway.retrieveModel(authorization, decodeModelId(model));
      text = JSON.stringify(anthropic ? anthropicModel(found) : found);
    }
  } catch (error) {
    writeOpenAIError(anthropic ? new TranslatingResponse(response, anthropicErrorsOnly) : response, id, openAIErrorAnswer(error, id));
    return;
  }
  response.writeHead(200, { "content-type": "application/json; charset=utf-8", "content-length": String(Buffer.byteLength(text)), "x-request-id": id });
  response.end(text);
}

function decodeModelId(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

function answerTooLarge(response: V1Response, id: string, bodyBytes: number): void {
  const tooLarge = new DomainError(
    "body_too_large",
    `the body is larger than the gateway accepts (${formatBytes(bodyBytes)})`,
    "Send a shorter prompt, or fewer inputs per request; the operator sets the limit as limits.body_bytes in server.yaml (--body-bytes for llmgw gateway).",
  );
  // The rest of the body is not read: the connection cannot carry another request.
  response.shouldKeepAlive = false;
  writeOpenAIError(response, id, openAIErrorAnswer(tooLarge, id));
}

/** The body's bytes, in one buffer; "too-large" past the limit (the rest is left unread). A client that goes away mid-body gets nothing. */
function readBody(request: IncomingMessage, limit: number, done: (body: Buffer | "too-large") => void): void {
  const declared = Number(request.headers["content-length"]);
  if (declared > limit) {
    done("too-large");
    return;
  }
  const parts: Buffer[] = [];
  let length = 0;
  const onData = (part: Buffer) => {
    length += part.length;
    if (length > limit) {
      request.removeListener("data", onData);
      request.removeListener("end", onEnd);
      request.pause();
      done("too-large");
      return;
    }
    parts.push(part);
  };
  const onEnd = () => done(parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts, length));
  request.on("data", onData);
  request.on("end", onEnd);
  // A client gone mid-body is nobody to answer; without a listener its reset would be thrown.
  request.on("error", () => undefined);
}

