import type { FastifyInstance } from "fastify";
import { usageBatchSchema, type GatewayKeyFeedEntry } from "../../protocol/index.js";
import { listGatewayKeys, type Store, addUsage } from "../../store/index.js";
import { parseBody, parseQuery } from "../parse-body.js";
import { z } from "zod";
import { matchesText, pageQueryShape } from "../lists/list-query.js";
import { sendItems } from "../lists/list-answer.js";

const feedQuery = z.strictObject(pageQueryShape);

/**
 * What standalone gateways need from the store, over HTTP: the key table
 * (hashes, never keys; re-read every few seconds) and a place to add the
 * usage they counted. Admin only: a gateway holds an admin token already, for
 * the routing table.
 */
export function registerGatewayFeedRoutes(app: FastifyInstance, store: Store): void {
  app.get("/api/v1/gateway/keys", { config: { access: "admin", api: { summary: "The gateway keys' hashes and limits (for llmgw gateway), searched and paged", query: feedQuery } } }, async (request, reply) => {
    const query = parseQuery(feedQuery, request.query);
    const entries: GatewayKeyFeedEntry[] = (await listGatewayKeys(store.db)).map((key) => ({
      name: key.name,
      key_hash: key.hash,
      models: key.models === null ? null : [...key.models],
      rpm: key.rpm,
      tpm: key.tpm,
      max_in_flight: key.maxInFlight,
      expires_at: key.expiresAt,
      created_at: key.createdAt,
      revoked_at: key.revokedAt,
    }));
    return sendItems(request, reply, { field: "keys", items: entries.filter((entry) => matchesText(query.q, [entry.name])), key: (entry) => entry.name, query });
  });

  app.post("/api/v1/gateway/usage", { config: { access: "admin", api: { summary: "A gateway's usage counts, added to the stored ones (for llmgw gateway)", body: usageBatchSchema } } }, async (request) => {
    const batch = parseBody(usageBatchSchema, request.body);
    await addUsage(
      store.db,
      batch.usage.map((row) => ({
        key: row.key,
        model: row.model,
        minute: row.minute,
        requests: row.requests,
        errors: row.errors,
        promptTokens: row.prompt_tokens,
        completionTokens: row.completion_tokens,
      })),
    );
    return { added: batch.usage.length };
  });
}
