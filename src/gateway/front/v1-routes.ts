import type { GatewayEndpoint } from "../wire/gateway-exchange.js";

/**
 * What the gateway does with a POST to a path under /v1:
 * - proxied: sent to an engine that serves the endpoint (Gateway.handle);
 *   `front` says the socket-level front (gateway-front.ts) reads it itself,
 *   the hot path every chat, completion and embedding takes; the rest are read
 *   by node's HTTP server, then answered by the same Gateway.handle;
 * - translated: answered through a translation to chat completions, wholly
 *   (Anthropic's Messages API) or for the engines without it (Responses).
 */
export type V1PostRoute =
  | { readonly kind: "proxied"; readonly endpoint: GatewayEndpoint; readonly front: boolean }
  | { readonly kind: "translated"; readonly translation: "responses" | "messages" | "count_tokens" };

/** The /v1 POST routes, path to what the gateway does with it: the one table the front and answerV1Request both read. */
export const v1PostRoutes: ReadonlyMap<string, V1PostRoute> = new Map<string, V1PostRoute>([
  ["/v1/chat/completions", { kind: "proxied", endpoint: "chat/completions", front: true }],
  ["/v1/completions", { kind: "proxied", endpoint: "completions", front: true }],
  ["/v1/embeddings", { kind: "proxied", endpoint: "embeddings", front: true }],
  ["/v1/responses", { kind: "translated", translation: "responses" }],
  ["/v1/messages", { kind: "translated", translation: "messages" }],
  ["/v1/messages/count_tokens", { kind: "translated", translation: "count_tokens" }],
  ["/v1/rerank", { kind: "proxied", endpoint: "rerank", front: false }],
  ["/v1/score", { kind: "proxied", endpoint: "score", front: false }],
]);

/**
 * The front's routes by their HTTP/1.1 request line, so it finds one with a
 * single Map lookup on the line as it arrives; built once, from the table.
 */
export const frontRequestLines: ReadonlyMap<string, GatewayEndpoint> = new Map(
  [...v1PostRoutes].flatMap(([path, route]): [string, GatewayEndpoint][] => (route.kind === "proxied" && route.front ? [[`POST ${path} HTTP/1.1`, route.endpoint]] : [])),
);
