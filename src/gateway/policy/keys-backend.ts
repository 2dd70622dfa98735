import { request } from "undici";
import { gatewayKeyFeedSchema, usageRow, type GatewayKey, type UsageBatch, type UsageIncrement, readErrorBody } from "../../protocol/index.js";

/**
 * Where KeysPolicy reads keys and writes usage: the store, in a server; the
 * server's admin API, in a standalone gateway (which has no database).
 */
export interface KeysBackend {
  readKeys(): Promise<GatewayKey[]>;
  writeUsage(increments: readonly UsageIncrement[]): Promise<void>;
}

/** A standalone gateway's keys and usage, through GET /api/v1/gateway/keys and POST /api/v1/gateway/usage on its server. */
export function httpKeysBackend(server: string, token: string): KeysBackend {
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
  const call = async (method: "GET" | "POST", path: string, body?: string): Promise<unknown> => {
    const answer = await request(new URL(path, server), { method, headers, ...(body !== undefined ? { body } : {}) });
    const text = await answer.body.text();
    if (answer.statusCode >= 300) {
      const error = readErrorBody(text);
      throw new Error(`${method} ${path} answered ${answer.statusCode}${error ? `: ${error.message}` : ""}`);
    }
    return JSON.parse(text) as unknown;
  };
  return {
    async readKeys() {
      const feed = gatewayKeyFeedSchema.parse(await call("GET", "/api/v1/gateway/keys"));
      return feed.keys.map((key) => ({
        id: key.name,
        name: key.name,
        hash: key.key_hash,
        models: key.models,
        rpm: key.rpm,
        tpm: key.tpm,
        maxInFlight: key.max_in_flight,
        expiresAt: key.expires_at,
        createdAt: key.created_at,
        revokedAt: key.revoked_at,
      }));
    },
    async writeUsage(increments) {
      // The ledger hands over at most usageBatchLimit rows, what the server's schema admits.
      const batch: UsageBatch = { usage: increments.map(usageRow) };
      await call("POST", "/api/v1/gateway/usage", JSON.stringify(batch));
    },
  };
}
