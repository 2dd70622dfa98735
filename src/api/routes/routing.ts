import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { routingLongPollMs, type RoutingTable } from "../../protocol/index.js";
import { parseQuery } from "../parse-body.js";

/** Where the server's routing table comes from (the server's RoutingTableSource). */
export interface RoutingTableFeed {
  after(after: number, timeoutMs: number, signal: AbortSignal): Promise<RoutingTable>;
}

const routingQuery = z.strictObject({
  /** The revision the caller holds: the answer waits until there is a newer one (or the long poll ends). */
  after: z.coerce.number().int().min(0).optional(),
  /** How long to hold the request when nothing changes, in ms; at most the default. */
  wait_ms: z.coerce.number().int().min(0).max(routingLongPollMs).optional(),
});

/**
 * GET /api/v1/routing?after=REVISION: the routing table, for `llmgw gateway`
 * processes. It carries every replica's API key, so it is admin-only: a
 * read-only token sees replicas through `ctl replicas`, never their keys.
 */
export function registerRoutingRoutes(app: FastifyInstance, feed: RoutingTableFeed): void {
  app.get("/api/v1/routing", { config: { access: "admin", api: { summary: "The routing table, at once or when its revision passes after (carries replica keys)", query: routingQuery } } }, async (request) => {
    const query = parseQuery(routingQuery, request.query);
    const gone = new AbortController();
    request.raw.once("close", () => gone.abort());
    return await feed.after(query.after ?? -1, query.after === undefined ? 0 : (query.wait_ms ?? routingLongPollMs), gone.signal);
  });
}
