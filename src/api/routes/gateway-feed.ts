import type { FastifyInstance } from "fastify";
import { usageBatchSchema, type GatewayKeyFeedEntry } from "../../protocol/gateway-keys-feed.js";
import { listGatewayKeys } from "../../store/gateway-key-rows.js";
import type { Store } from "../../store/open-store.js";
import { addUsage } from "../../store/usage-rows.js";
import { parseBody } from "../parse-body.js";

/**
 * What standalone gateways need from the store, over HTTP: the key table
 * (hashes, never keys; re-read every few seconds) and a place to add the
 * usage they counted. Admin only: a gateway holds an admin token already, for
 * the routing table.
 */
export function registerGatewayFeedRoutes(app: FastifyInstance, store: Store): void {
  app.get("/api/v1/gateway/keys", { config: { access: "admin" } }, async (): Promise<{ keys: GatewayKeyFeedEntry[] }> => ({
    keys: (await listGatewayKeys(store.db)).map((key) => ({
      name: key.name,
      key_hash: key.hash,
      models: key.models === null ? null : [...key.models],
      rpm: key.rpm,
      tpm: key.tpm,
      expires_at: key.expiresAt,
      created_at: key.createdAt,
      revoked_at: key.revokedAt,
    })),
  }));

  app.post("/api/v1/gateway/usage", { config: { access: "admin" } }, async (request) => {
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
