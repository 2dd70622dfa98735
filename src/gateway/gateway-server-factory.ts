import { createServer, type IncomingMessage, type Server, type ServerOptions, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { answerV1Request } from "./answer-v1-request.js";
import type { Gateway, GatewayLog } from "./gateway.js";
import { GatewayFront } from "./gateway-front.js";

/** The settings fastify would have applied to a server it made itself. */
interface FactorySettings {
  readonly http?: ServerOptions | null;
  readonly keepAliveTimeout?: number;
  readonly requestTimeout?: number;
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
 */
export function gatewayServerFactory(gateway: Gateway, log: GatewayLog): (fastifyHandler: (request: IncomingMessage, response: ServerResponse) => void, settings: FactorySettings) => Server {
  return (fastifyHandler, settings) => {
    const server = createServer(settings.http ?? {}, (request, response) => {
      if (!answerV1Request(gateway, request, response, log)) fastifyHandler(request, response);
    });
    if (settings.keepAliveTimeout !== undefined) server.keepAliveTimeout = settings.keepAliveTimeout;
    if (settings.requestTimeout !== undefined) server.requestTimeout = settings.requestTimeout;
    if (settings.connectionTimeout !== undefined) server.setTimeout(settings.connectionTimeout);
    if (settings.maxRequestsPerSocket !== undefined && settings.maxRequestsPerSocket !== null && settings.maxRequestsPerSocket > 0) server.maxRequestsPerSocket = settings.maxRequestsPerSocket;
    // Node's own "connection" listener is what reads HTTP on a socket: the front calls it for the connections it hands over.
    const nodeListeners = server.listeners("connection") as ((socket: Socket) => void)[];
    server.removeAllListeners("connection");
    const front = new GatewayFront({ gateway, log, server, handOff: (socket) => nodeListeners.forEach((listener) => listener.call(server, socket)) });
    server.on("connection", (socket: Socket) => front.accept(socket));
    gateway.closingSignal.addEventListener("abort", () => front.close(), { once: true });
    return server;
  };
}
