import { createServer, type IncomingMessage, type Server, type ServerOptions, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { type TlsFiles, createRenewingHttpsServer } from "../../net/index.js";
import { answerV1Request } from "./answer-v1-request.js";
import type { Gateway } from "../request/gateway.js";
import type { GatewayLog } from "../wire/gateway-exchange.js";
import { GatewayFront } from "./gateway-front.js";
import { defaultServerLimits, type ServerLimits } from "../../catalog/index.js";

/** Node checks its connections' head and request deadlines this often at most (its own default is 30 s). */
const maxCheckingIntervalMs = 30_000;

/** The settings fastify would have applied to a server it made itself. */
interface FactorySettings {
  readonly http?: ServerOptions | null;
  readonly connectionTimeout?: number;
  readonly maxRequestsPerSocket?: number | null;
}

/**
 * Fastify's `serverFactory` for an app that carries the gateway: one
 * node:http server on one port. Each connection is read first by the
 * gateway's front (GatewayFront), which answers the OpenAI POST routes on
 * the socket itself and hands every other connection to node's server.
 * There, /v1 is answered by the gateway's own listener (answerV1Request)
 * and everything else (the admin API, /metrics, health) by fastify. The
 * server stays fastify's, so listen, close and shutdown behave as before.
 * `log` is read per warning: the app's logger does not exist yet when the
 * server is made.
 *
 * `limits` (server.yaml's `limits:`, or `llmgw gateway`'s flags) hold on
 * both readers, documented in docs/security-and-operations.md: a head past
 * headerBytes is answered 431, a /v1 body past bodyBytes 413, a head not in
 * within headerTimeoutMs or a request not within requestTimeoutMs 408, an
 * idle kept-alive connection is closed after idleTimeoutMs, and past
 * `connections` new connections are closed at once while those open are
 * served. They take the place of fastify's keepAliveTimeout and
 * requestTimeout settings.
 *
 * With `tls` the server is node's HTTPS server and the front reads the
 * decrypted socket: node hands HTTP its TLS sockets on "secureConnection"
 * (the "connection" event there carries the raw TCP socket TLS reads), so
 * the front takes over that event instead, and the /v1 hot path is the same
 * code over TLS as over plain TCP.
 */
export function gatewayServerFactory(
  gateway: Gateway,
  log: GatewayLog,
  tls?: TlsFiles,
  limits: ServerLimits = defaultServerLimits,
): (fastifyHandler: (request: IncomingMessage, response: ServerResponse) => void, settings: FactorySettings) => Server {
  return (fastifyHandler, settings) => {
    const handler = (request: IncomingMessage, response: ServerResponse): void => {
      if (!answerV1Request(gateway, request, response, log, limits.bodyBytes)) fastifyHandler(request, response);
    };
    const httpOptions: ServerOptions = {
      ...settings.http,
      maxHeaderSize: limits.headerBytes,
      // A later request on a connection node reads is checked this often: at 30 s a slow head would hold its connection three times the default limit.
      connectionsCheckingInterval: Math.min(maxCheckingIntervalMs, limits.headerTimeoutMs),
    };
    // A renewed certificate reaches new connections without a restart; open ones keep theirs.
    const server = tls
      ? createRenewingHttpsServer(tls, httpOptions, handler, {
          renewed: (file) => log.info?.({ file }, "tls-certificate-renewed: new connections get the new certificate"),
          failed: (message) => log.warn({}, `tls-certificate-not-renewed: ${message}`),
        })
      : createServer(httpOptions, handler);
    // Set on node's server, where the front reads them too: one value per limit for both readers.
    server.keepAliveTimeout = limits.idleTimeoutMs;
    server.headersTimeout = limits.headerTimeoutMs;
    server.requestTimeout = limits.requestTimeoutMs;
    server.maxConnections = limits.connections;
    if (settings.connectionTimeout !== undefined) server.setTimeout(settings.connectionTimeout);
    if (settings.maxRequestsPerSocket !== undefined && settings.maxRequestsPerSocket !== null && settings.maxRequestsPerSocket > 0) server.maxRequestsPerSocket = settings.maxRequestsPerSocket;
    // Node's own "connection" listener is what reads HTTP on a socket: the front calls it for the connections it hands over.
    const httpEvent = tls ? "secureConnection" : "connection";
    const nodeListeners = server.listeners(httpEvent) as ((socket: Socket) => void)[];
    server.removeAllListeners(httpEvent);
    const front = new GatewayFront({ gateway, log, server, limits, handOff: (socket) => nodeListeners.forEach((listener) => listener.call(server, socket)) });
    server.on(httpEvent, (socket: Socket) => front.accept(socket));
    gateway.closingSignal.addEventListener("abort", () => front.close(), { once: true });
    return server;
  };
}
