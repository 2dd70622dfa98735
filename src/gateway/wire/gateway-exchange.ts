import type { IncomingHttpHeaders } from "node:http";
import type { ExtraRoute } from "../../protocol/index.js";
import type { V1Response } from "./v1-response.js";

/** Where the gateway's parts write their warnings: the process's log, or one request's (its id on every line). */
export interface GatewayLog {
  warn(facts: Record<string, unknown>, message: string): void;
  /** Events worth a line that are not trouble (a certificate renewed); dropped where the log has no info level. */
  info?(facts: Record<string, unknown>, message: string): void;
}

/** The /v1 routes the gateway proxies: the classic three, and /v1/responses, /v1/rerank, /v1/score. */
export type GatewayEndpoint = "chat/completions" | "completions" | "embeddings" | ExtraRoute;

/** What the gateway reads of the request: its raw body, headers and id, and the raw response to write. */
export interface GatewayExchange {
  readonly id: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
  readonly response: V1Response;
  /** Warnings about this request: the request id is on every line. */
  readonly log: GatewayLog;
}
