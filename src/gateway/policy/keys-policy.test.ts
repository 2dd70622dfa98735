import { randomUUID } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { storesUnderTest } from "../../../test/support/postgres.js";
import { hashToken, newToken } from "../../auth/tokens.js";
import { CatalogService } from "../../services/catalog-service.js";
import { buildApp } from "../../server/build-app.js";
import { openStore, type Store } from "../../store/open-store.js";
import { insertToken } from "../../store/token-rows.js";
import type { PlacedEntry } from "../../catalog/build-catalog.js";
import { GatewayRefusal } from "./gateway-policy.js";
import { KeysPolicy } from "./keys-policy.js";
import { httpKeysBackend } from "./keys-backend.js";
import { gatewayKeyFeedSchema } from "../../protocol/gateway-keys-feed.js";
import { storeKeysBackend } from "../../server/store-keys-backend.js";
import { thrownBy } from "../../../test/support/refusal.js";

const declared: PlacedEntry[] = [
  {
    source: "file",
    place: "server.yaml models[0] (qwen)",
    entry: { name: "qwen", aliases: ["chat"], profiles: [{ engine: "vllm", source: "hf://Qwen/Qwen2.5-0.5B-Instruct", gpus: 1 }] },
  },
  { source: "file", place: "server.yaml models[1] (llama)", entry: { name: "llama", profiles: [{ engine: "vllm", source: "hf://meta-llama/Llama-3.2-1B", gpus: 1 }] } },
];

const refusal = (work: () => unknown): GatewayRefusal => thrownBy(GatewayRefusal, work);

describe.each(storesUnderTest)("gateway keys on $kind", (storeUnderTest) => {
  let store: Store;
  let drop: () => Promise<void>;
  let app: FastifyInstance;
  let policy: KeysPolicy;
  let clock = Date.now();
  const admin = newToken("admin");
  const as = (token: string) => ({ authorization: `Bearer ${token}` });
  const bearer = (key: string) => `Bearer ${key}`;

  async function createKey(payload: Record<string, unknown>): Promise<string> {
    const created = await app.inject({ method: "POST", url: "/api/v1/keys", headers: as(admin), payload });
    expect(created.statusCode, created.body).toBe(201);
    return (created.json() as { key: string }).key;
  }

  beforeAll(async () => {
    const location = await storeUnderTest.location();
    drop = location.drop;
    store = await openStore(location.location);
    await insertToken(store.db, { id: randomUUID(), name: "admin", role: "admin", hash: hashToken(admin) }, new Date().toISOString());
    // The clock only moves when a test moves it; the timers are long so nothing runs behind a test's back.
    policy = await KeysPolicy.start(storeKeysBackend(store), { now: () => clock, refreshIntervalMs: 3_600_000, flushIntervalMs: 3_600_000 });
    app = await buildApp({ store, catalog: new CatalogService(store, declared, "server.yaml"), adminTokenHint: "see admin-token", gatewayKeys: policy });
  });
  afterAll(async () => {
    await app.close();
    await policy.close();
    await store.close();
    await drop();
  });

  it("makes a key shown once, lists it without its value, and lets it call the gateway", async () => {
    const created = await app.inject({ method: "POST", url: "/api/v1/keys", headers: as(admin), payload: { name: "data-team", models: ["qwen", "chat"], rpm: 100 } });
    expect(created.statusCode).toBe(201);
    const body = created.json() as { key: string; name: string; state: string; models: string[]; rpm: number; tpm: null; expires_at: null };
    expect(body.key).toMatch(/^llmgw_key_/);
    expect([body.name, body.state, body.models, body.rpm, body.tpm, body.expires_at]).toEqual(["data-team", "active", ["qwen", "chat"], 100, null, null]);

    const caller = policy.authenticate(bearer(body.key));
    expect([caller.key, caller.allowedModels]).toEqual(["data-team", ["qwen", "chat"]]);

    const listed = await app.inject({ method: "GET", url: "/api/v1/keys", headers: as(admin) });
    expect(listed.json().keys.map((key: { name: string; state: string }) => [key.name, key.state])).toEqual([["data-team", "active"]]);
    const everything = listed.body + (await app.inject({ method: "GET", url: "/api/v1/audit", headers: as(admin) })).body;
    expect(everything).not.toContain(body.key);
    expect(everything).not.toContain(hashToken(body.key));
    expect(everything).toContain('"action":"gateway-key-created"');
  });

  it("keeps gateway keys and admin tokens apart: neither opens the other's door", async () => {
    const key = await createKey({ name: "apart" });
    const adminCall = await app.inject({ method: "GET", url: "/api/v1/models", headers: as(key) });
    expect([adminCall.statusCode, adminCall.json().error.code]).toEqual([401, "unauthorized"]);
    const refused = refusal(() => policy.authenticate(bearer(admin)));
    expect([refused.status, refused.code]).toEqual([401, "invalid_api_key"]);
    expect(refused.message).toContain("admin-API token");
    expect(refused.message).not.toContain(admin);
  });

  it("refuses a missing, unknown, revoked or expired key with 401 in OpenAI's shape", async () => {
    expect([refusal(() => policy.authenticate(undefined)).status, refusal(() => policy.authenticate(undefined)).code]).toEqual([401, "missing_api_key"]);
    expect(refusal(() => policy.authenticate("Basic abc")).code).toBe("missing_api_key");
    const unknown = refusal(() => policy.authenticate(bearer(newToken("key"))));
    expect([unknown.status, unknown.type, unknown.code]).toEqual([401, "invalid_request_error", "invalid_api_key"]);

    const revokedKey = await createKey({ name: "short-lived" });
    expect(policy.authenticate(bearer(revokedKey)).key).toBe("short-lived");
    const revoked = await app.inject({ method: "DELETE", url: "/api/v1/keys/short-lived", headers: as(admin) });
    expect([revoked.json().name, revoked.json().state]).toEqual(["short-lived", "revoked"]);
    // This server's API answered only after its gateway took the change.
    expect(refusal(() => policy.authenticate(bearer(revokedKey))).message).toContain('"short-lived" was revoked');

    const expiringKey = await createKey({ name: "trial", expires: "1h" });
    expect(policy.authenticate(bearer(expiringKey)).key).toBe("trial");
    const saved = clock;
    clock = Date.now() + 2 * 3_600_000;
    try {
      expect(refusal(() => policy.authenticate(bearer(expiringKey))).message).toContain('"trial" expired at');
    } finally {
      clock = saved;
    }
    const states = (await app.inject({ method: "GET", url: "/api/v1/keys", headers: as(admin) })).json().keys as { name: string; state: string }[];
    expect(states.find((key) => key.name === "short-lived")?.state).toBe("revoked");
  });

  it("refuses a model outside the key's scope with 403, by model, alias or adapter name as asked", async () => {
    const key = await createKey({ name: "scoped", models: ["chat"] });
    const caller = policy.authenticate(bearer(key));
    expect(() => policy.admit(caller, "chat", 10)).not.toThrow();
    const refused = refusal(() => policy.admit(caller, "llama", 10));
    expect([refused.status, refused.type, refused.code]).toEqual([403, "permission_error", "model_not_allowed"]);
    expect(refused.message).toContain('may not use "llama"; it may use: chat');
    // The alias allows the alias, not every name of its model.
    expect(refusal(() => policy.admit(caller, "qwen", 10)).status).toBe(403);
  });

  // The decisions here are taken in this process, synchronously: the promise a worker's shared limits return is tested with them.
  it("answers 429 with Retry-After once the requests per minute are spent, and admits again as the window slides", async () => {
    const key = await createKey({ name: "slow", rpm: 3 });
    clock = Date.parse("2030-01-01T00:00:10.000Z");
    for (let count = 0; count < 3; count += 1) void policy.admit(policy.authenticate(bearer(key)), "qwen", 1);
    const refused = refusal(() => policy.admit(policy.authenticate(bearer(key)), "qwen", 1));
    expect([refused.status, refused.type, refused.code, refused.retryAfterSeconds]).toEqual([429, "requests", "rate_limit_exceeded", 60]);
    clock += 59_000;
    expect(refusal(() => policy.admit(policy.authenticate(bearer(key)), "qwen", 1)).retryAfterSeconds).toBe(1);
    clock += 1_000;
    expect(() => policy.admit(policy.authenticate(bearer(key)), "qwen", 1)).not.toThrow();
  });

  it("counts tokens per minute from the estimate, then corrects them with the usage the engine reported", async () => {
    const key = await createKey({ name: "tokens", tpm: 1000 });
    clock = Date.parse("2030-01-02T00:00:00.000Z");
    const first = policy.authenticate(bearer(key));
    void policy.admit(first, "qwen", 900);
    const second = policy.authenticate(bearer(key));
    const spent = refusal(() => policy.admit(second, "qwen", 200));
    expect([spent.status, spent.type, spent.code, spent.retryAfterSeconds]).toEqual([429, "tokens", "rate_limit_exceeded", 60]);
    // The answer used far fewer tokens than prompt + max_tokens promised.
    void policy.record({ caller: first, model: "qwen", promptTokens: 50, completionTokens: 50, error: false });
    expect(() => policy.admit(second, "qwen", 800)).not.toThrow();
    const tooLarge = refusal(() => policy.admit(policy.authenticate(bearer(key)), "qwen", 1001));
    expect([tooLarge.status, tooLarge.code, tooLarge.retryAfterSeconds]).toEqual([429, "request_too_large", undefined]);
  });

  it("sees a key revoked by another server sharing the store within its refresh interval", async () => {
    const key = await createKey({ name: "shared" });
    const other = await KeysPolicy.start(storeKeysBackend(store), { refreshIntervalMs: 100, flushIntervalMs: 3_600_000 });
    try {
      expect(other.authenticate(bearer(key)).key).toBe("shared");
      await app.inject({ method: "DELETE", url: "/api/v1/keys/shared", headers: as(admin) });
      await vi.waitFor(() => expect(refusal(() => other.authenticate(bearer(key))).status).toBe(401), { timeout: 5000, interval: 50 });
    } finally {
      await other.close();
    }
  });

  it("sums usage per key and model, errors included, written in batches and read back by the API", async () => {
    const key = await createKey({ name: "usage" });
    clock = Date.now();
    const record = (model: string, promptTokens: number, completionTokens: number, error = false) =>
      policy.record({ caller: policy.authenticate(bearer(key)), model, promptTokens, completionTokens, error });
    void record("qwen", 10, 20);
    void record("qwen", 5, 7);
    void record("llama", 3, 0, true);
    const stored = await store.db.selectFrom("usage").selectAll().where("key", "=", "usage").execute();
    expect(stored).toEqual([]);

    const answer = await app.inject({ method: "GET", url: "/api/v1/usage?key=usage", headers: as(admin) });
    expect(answer.statusCode).toBe(200);
    const rows = (answer.json() as { usage: { key: string; model: string; requests: number; errors: number; prompt_tokens: number; completion_tokens: number }[] }).usage;
    expect(rows.map((row) => [row.model, row.requests, row.errors, row.prompt_tokens, row.completion_tokens])).toEqual([
      ["qwen", 2, 0, 15, 27],
      ["llama", 1, 1, 3, 0],
    ]);
    // A second batch adds to the same minute's row rather than replacing it.
    void record("qwen", 1, 1);
    await policy.flushUsage();
    const again = (await app.inject({ method: "GET", url: "/api/v1/usage?key=usage&model=qwen", headers: as(admin) })).json() as { usage: { requests: number; prompt_tokens: number }[] };
    expect(again.usage.map((row) => [row.requests, row.prompt_tokens])).toEqual([[3, 16]]);
    const none = (await app.inject({ method: "GET", url: "/api/v1/usage?key=usage&since=2030-01-01", headers: as(admin) })).json() as { usage: unknown[] };
    expect(none.usage).toEqual([]);
  });

  it("keeps a key's own cap on requests in flight: stored, listed, in the gateway's caller and in the standalone gateways' feed", async () => {
    const created = await app.inject({ method: "POST", url: "/api/v1/keys", headers: as(admin), payload: { name: "trial-cap", max_in_flight: 4 } });
    expect([created.statusCode, created.json().max_in_flight]).toEqual([201, 4]);
    const key = (created.json() as { key: string }).key;
    const plain = await createKey({ name: "no-cap" });
    // The caller the gateway counts slots against carries the key's cap; a key without one leaves the gateway's in force.
    expect(policy.authenticate(bearer(key)).maxInFlight).toBe(4);
    expect(policy.authenticate(bearer(plain)).maxInFlight).toBeNull();
    const listed = (await app.inject({ method: "GET", url: "/api/v1/keys", headers: as(admin) })).json().keys as { name: string; max_in_flight: number | null }[];
    expect(listed.filter((row) => ["trial-cap", "no-cap"].includes(row.name)).map((row) => [row.name, row.max_in_flight])).toEqual([
      ["trial-cap", 4],
      ["no-cap", null],
    ]);
    const feed = (await app.inject({ method: "GET", url: "/api/v1/gateway/keys?q=cap", headers: as(admin) })).json().keys as { name: string; max_in_flight: number | null }[];
    expect(feed.map((row) => [row.name, row.max_in_flight])).toEqual([
      ["trial-cap", 4],
      ["no-cap", null],
    ]);
    const audit = (await app.inject({ method: "GET", url: "/api/v1/audit", headers: as(admin) })).body;
    expect(audit).toContain('"max_in_flight":4');
  });

  it("refuses a cap on requests in flight that is not a whole number from 1 to 1000000, naming max_in_flight and the way out", async () => {
    for (const value of [0, -3, 2.5, 1_000_001, "8"]) {
      const refused = await app.inject({ method: "POST", url: "/api/v1/keys", headers: as(admin), payload: { name: "bad-cap", max_in_flight: value } });
      expect([refused.statusCode, refused.json().error.code], String(value)).toEqual([400, "invalid_input"]);
      expect(refused.json().error.details[0]).toEqual({
        where: "max_in_flight",
        message: "requests this key may have in flight at once, a whole number from 1 to 1000000 (leave it out for the gateway's limits.requests_per_key)",
      });
    }
    const names = ((await app.inject({ method: "GET", url: "/api/v1/keys", headers: as(admin) })).json().keys as { name: string }[]).map((key) => key.name);
    expect(names).not.toContain("bad-cap");
  });

  it("refuses keys it cannot honour: a duplicate name, an unknown model, a past expiry, a zero limit, an unknown key to revoke", async () => {
    await createKey({ name: "taken" });
    const duplicate = await app.inject({ method: "POST", url: "/api/v1/keys", headers: as(admin), payload: { name: "taken" } });
    expect([duplicate.statusCode, duplicate.json().error.code]).toEqual([409, "name_taken"]);
    const typo = await app.inject({ method: "POST", url: "/api/v1/keys", headers: as(admin), payload: { name: "typo", models: ["qwem"] } });
    expect([typo.statusCode, typo.json().error.code]).toEqual([404, "model_not_found"]);
    expect(typo.json().error.message).toContain('"qwem" (did you mean "qwen"?) is not a model, alias or adapter');
    expect(typo.json().error.hint).toContain("chat, llama, qwen");
    const past = await app.inject({ method: "POST", url: "/api/v1/keys", headers: as(admin), payload: { name: "past", expires: "2001-01-01" } });
    expect([past.statusCode, past.json().error.message]).toEqual([400, "expires: 2001-01-01T00:00:00.000Z is already past"]);
    const garbled = await app.inject({ method: "POST", url: "/api/v1/keys", headers: as(admin), payload: { name: "garbled", expires: "next week" } });
    expect(garbled.json().error.message).toContain('expires: "next week" is neither a duration nor a date');
    const zero = await app.inject({ method: "POST", url: "/api/v1/keys", headers: as(admin), payload: { name: "zero", rpm: 0 } });
    expect([zero.statusCode, zero.json().error.code]).toEqual([400, "invalid_input"]);
    expect(zero.json().error.details[0].message).toContain("requests per minute");
    const ghost = await app.inject({ method: "DELETE", url: "/api/v1/keys/ghost", headers: as(admin) });
    expect([ghost.statusCode, ghost.json().error.code]).toEqual([404, "gateway_key_not_found"]);
    const badSince = await app.inject({ method: "GET", url: "/api/v1/usage?since=yesterday", headers: as(admin) });
    expect([badSince.statusCode, badSince.json().error.code]).toEqual([400, "invalid_input"]);
    // None of the refused keys was made.
    const names = ((await app.inject({ method: "GET", url: "/api/v1/keys", headers: as(admin) })).json().keys as { name: string }[]).map((key) => key.name);
    expect(names.filter((name) => ["typo", "past", "garbled", "zero"].includes(name))).toEqual([]);
  });

  it("lets a read token read usage but not keys", async () => {
    const read = (await app.inject({ method: "POST", url: "/api/v1/tokens", headers: as(admin), payload: { name: "grafana" } })).json() as { token: string };
    expect((await app.inject({ method: "GET", url: "/api/v1/usage", headers: as(read.token) })).statusCode).toBe(200);
    expect((await app.inject({ method: "GET", url: "/api/v1/keys", headers: as(read.token) })).statusCode).toBe(403);
    expect((await app.inject({ method: "POST", url: "/api/v1/keys", headers: as(read.token), payload: { name: "sneaky" } })).statusCode).toBe(403);
  });

  it("writes the usage still in memory when it closes, and keeps serving the last keys it read when the store fails", async () => {
    const key = await createKey({ name: "closing" });
    const location = await storeUnderTest.location();
    const failures: string[] = [];
    const failing = await openStore(location.location);
    const other = await KeysPolicy.start(storeKeysBackend(store), { refreshIntervalMs: 3_600_000, flushIntervalMs: 3_600_000 });
    void other.record({ caller: other.authenticate(bearer(key)), model: "qwen", promptTokens: 4, completionTokens: 6, error: false });
    await other.close();
    const rows = await store.db.selectFrom("usage").select(["requests", "prompt_tokens", "completion_tokens"]).where("key", "=", "closing").execute();
    expect(rows.map((row) => [Number(row.requests), Number(row.prompt_tokens), Number(row.completion_tokens)])).toEqual([[1, 4, 6]]);

    // A policy whose store goes away reports the failure off the request path and keeps its keys.
    const detached = await KeysPolicy.start(storeKeysBackend(failing), { refreshIntervalMs: 50, flushIntervalMs: 3_600_000, onBackgroundError: (_error, during) => void failures.push(during) });
    try {
      const made = newToken("key");
      await failing.db
        .insertInto("gateway_keys")
        .values({ id: randomUUID(), name: "kept", key_hash: hashToken(made), models: null, rpm: null, tpm: null, expires_at: null, created_at: new Date().toISOString(), revoked_at: null })
        .execute();
      await detached.refresh();
      await failing.close();
      await vi.waitFor(() => expect(failures).toContain("refreshing gateway keys"), { timeout: 5000, interval: 50 });
      expect(detached.authenticate(bearer(made)).key).toBe("kept");
    } finally {
      await detached.close().catch(() => undefined);
      await location.drop();
    }
  });

  it("serves standalone gateways the key table (hashes, never keys) and takes their usage, to admin tokens only", async () => {
    const key = await createKey({ name: "remote", tpm: 500, max_in_flight: 3 });
    const address = await app.listen({ host: "127.0.0.1", port: 0 });
    try {
      const backend = httpKeysBackend(address, admin);
      const remote = (await backend.readKeys()).find((row) => row.name === "remote");
      expect([remote?.hash, remote?.tpm, remote?.maxInFlight]).toEqual([hashToken(key), 500, 3]);
      // A server of before per-key caps sends none: its keys take the gateway's own cap.
      const older = gatewayKeyFeedSchema.parse({ keys: [{ name: "old", key_hash: "h", models: null, rpm: null, tpm: null, expires_at: null, created_at: "2026-11-01T00:00:00Z", revoked_at: null }] });
      expect(older.keys[0]?.max_in_flight).toBeNull();
      await backend.writeUsage([{ key: "remote", model: "qwen", minute: "2030-03-01T10:00Z", requests: 2, errors: 1, promptTokens: 30, completionTokens: 40 }]);
      await backend.writeUsage([{ key: "remote", model: "qwen", minute: "2030-03-01T10:00Z", requests: 1, errors: 0, promptTokens: 5, completionTokens: 5 }]);
      const usage = (await app.inject({ method: "GET", url: "/api/v1/usage?key=remote&since=2030-03-01", headers: as(admin) })).json() as { usage: { requests: number; errors: number; prompt_tokens: number; completion_tokens: number }[] };
      expect(usage.usage.map((row) => [row.requests, row.errors, row.prompt_tokens, row.completion_tokens])).toEqual([[3, 1, 35, 45]]);

      const read = (await app.inject({ method: "POST", url: "/api/v1/tokens", headers: as(admin), payload: { name: "peeker" } })).json() as { token: string };
      await expect(httpKeysBackend(address, read.token).readKeys()).rejects.toThrow("GET /api/v1/gateway/keys answered 403");
      const garbled = await app.inject({ method: "POST", url: "/api/v1/gateway/usage", headers: as(admin), payload: { usage: [{ key: "remote", model: "qwen", minute: "yesterday", requests: 1, errors: 0, prompt_tokens: 0, completion_tokens: 0 }] } });
      expect([garbled.statusCode, garbled.json().error.code]).toEqual([400, "invalid_input"]);
      expect(garbled.json().error.details[0].message).toContain("a minute such as 2026-11-30T17:42Z");
    } finally {
      await app.close();
    }
  });
});
