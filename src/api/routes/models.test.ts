import { randomUUID } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { temporaryDirectory } from "../../../test/support/temporary-directory.js";
import { openStore, type Store } from "../../store/open-store.js";
import { insertToken } from "../../store/token-rows.js";
import { CatalogService } from "../../services/catalog-service.js";
import { buildApp } from "../../server/build-app.js";
import { hashToken, newToken } from "../../auth/tokens.js";

describe("admin API", () => {
  let store: Store;
  let app: FastifyInstance;
  const admin = newToken("admin");
  const reader = newToken("read");
  const as = (token: string) => ({ authorization: `Bearer ${token}` });

  beforeAll(async () => {
    store = await openStore({ database: undefined, dataDir: temporaryDirectory("llmgw-api-") });
    const at = new Date().toISOString();
    await insertToken(store.db, { id: randomUUID(), name: "admin", role: "admin", hash: hashToken(admin) }, at);
    await insertToken(store.db, { id: randomUUID(), name: "dashboard", role: "read", hash: hashToken(reader) }, at);
    app = await buildApp({ store, catalog: new CatalogService(store, [], "server.yaml"), adminTokenHint: "see admin-token" });
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  it("serves a model whose name holds a slash, sent encoded", async () => {
    const created = await app.inject({ method: "POST", url: "/api/v1/models", headers: as(admin), payload: { name: "Qwen/Qwen2.5-7B", profiles: [{ engine: "vllm", source: "x" }] } });
    expect(created.statusCode).toBe(201);
    const shown = await app.inject({ method: "GET", url: "/api/v1/models/Qwen%2FQwen2.5-7B", headers: as(reader) });
    expect(shown.statusCode).toBe(200);
    expect(shown.json()).toMatchObject({ name: "Qwen/Qwen2.5-7B", state: "pending" });
    const scaled = await app.inject({ method: "POST", url: "/api/v1/models/Qwen%2FQwen2.5-7B/scale", headers: as(admin), payload: { min: 0, max: 2 } });
    expect(scaled.json()).toMatchObject({ scaling: { min: 0, max: 2 }, state: "on-demand" });
  });

  it("sets and clears a model's target, and refuses a target of zero naming the field", async () => {
    await app.inject({ method: "POST", url: "/api/v1/models", headers: as(admin), payload: { name: "targeted", scaling: { min: 1, max: 3 }, profiles: [{ engine: "vllm", source: "x" }] } });
    const set = await app.inject({ method: "POST", url: "/api/v1/models/targeted/target", headers: as(admin), payload: { in_flight: 8 } });
    expect(set.json()).toMatchObject({ target: { in_flight: 8 }, placement: null, last_failure: null });
    const refused = await app.inject({ method: "POST", url: "/api/v1/models/targeted/target", headers: as(admin), payload: { in_flight: 0 } });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().error).toMatchObject({ code: "invalid_input", message: expect.stringContaining("in_flight") });
    const cleared = await app.inject({ method: "POST", url: "/api/v1/models/targeted/target", headers: as(admin), payload: { in_flight: null } });
    expect(cleared.json()).toMatchObject({ target: null });
  });

  it("lets a read-only token list but not change", async () => {
    expect((await app.inject({ method: "GET", url: "/api/v1/models", headers: as(reader) })).statusCode).toBe(200);
    const refused = await app.inject({ method: "POST", url: "/api/v1/models", headers: as(reader), payload: { name: "x", profiles: [{ engine: "vllm", source: "x" }] } });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error).toMatchObject({ code: "forbidden", message: 'token "dashboard" is read-only; this change needs an admin token' });
  });

  it("tells a read-only token that asks for a plan that planning, not a change, needs an admin token, and what it can do instead", async () => {
    const refused = await app.inject({ method: "GET", url: "/api/v1/plan?source=/etc", headers: as(reader) });
    expect(refused.statusCode).toBe(403);
    const error = refused.json().error as { code: string; message: string; hint: string };
    expect(error.code).toBe("forbidden");
    expect(error.message).toBe('token "dashboard" is read-only; planning on the server needs an admin token, since the server reads whatever URL or path the plan names');
    expect(error.message).not.toContain("change");
    expect(error.hint).toContain("`llmgw ctl model plan SOURCE --gpus SPEC` needs no token");
  });

  it("names the route, not a change, when a read-only token reads an admin-only list", async () => {
    const refused = await app.inject({ method: "GET", url: "/api/v1/tokens", headers: as(reader) });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error.message).toBe('token "dashboard" is read-only; GET /api/v1/tokens needs an admin token');
  });

  it("answers a body that is not JSON with the one error shape", async () => {
    const response = await app.inject({ method: "POST", url: "/api/v1/models", headers: { ...as(admin), "content-type": "application/json" }, payload: "{not json" });
    expect(response.statusCode).toBe(400);
    expect(response.json().error.code).toBe("invalid_input");
    expect(response.json().error.hint).toContain("JSON");
  });

  it("names each problem in a rejected body by its path", async () => {
    const response = await app.inject({ method: "POST", url: "/api/v1/models", headers: as(admin), payload: { name: "bad", profiles: [{ engine: "vllm", source: "x", gpus: 0, slot: 1 }] } });
    expect(response.statusCode).toBe(400);
    const body = response.json().error;
    expect(body.code).toBe("unknown_key");
    expect(body.details).toEqual([{ where: "profiles[0].slot", message: 'unknown key "slot" (did you mean "slots"?); known keys here: name, engine, source, gpu_class, gpus, nodes, quantization, memory_gb, cpu_cores, slots, args, env, secret_env, comfy' }]);
  });

  it("refuses a scale with nothing to change, and an unknown class", async () => {
    await app.inject({ method: "POST", url: "/api/v1/models", headers: as(admin), payload: { name: "m", profiles: [{ engine: "vllm", source: "x" }] } });
    const empty = await app.inject({ method: "POST", url: "/api/v1/models/m/scale", headers: as(admin), payload: {} });
    expect(empty.json().error.message).toContain("give at least one of min, max, idle_timeout");
    const badClass = await app.inject({ method: "POST", url: "/api/v1/models/m/class", headers: as(admin), payload: { class: "vip" } });
    expect(badClass.json().error.message).toContain("class: one of critical, standard, opportunistic, or default");
  });

  it("checks change bodies with the catalog's own rules: required fields, unknown keys, ranges", async () => {
    const resources = await app.inject({ method: "POST", url: "/api/v1/models/m/resources", headers: as(admin), payload: { cores: 4 } });
    const details = resources.json().error.details as { where: string; message: string }[];
    const at = (where: string) => details.find((detail) => detail.where === where)?.message;
    expect(details).toHaveLength(2);
    expect(at("cores")).toContain('did you mean "cpu_cores"?');
    expect(at("memory_gb")).toMatch(/^required: host memory in GB/);
    const owner = await app.inject({ method: "POST", url: "/api/v1/models/m/owner", headers: as(admin), payload: { owner: "" } });
    expect(owner.json().error.message).toContain("owner: an owner name (a team or a person)");
    const scale = await app.inject({ method: "POST", url: "/api/v1/models/m/scale", headers: as(admin), payload: { min: -1 } });
    expect(scale.json().error.message).toContain("min: a whole number of replicas, 0 to 10000");
  });

  it("answers an unknown route and an unknown model with their codes", async () => {
    const route = await app.inject({ method: "GET", url: "/api/v1/nothing", headers: as(admin) });
    expect([route.statusCode, route.json().error.code]).toEqual([404, "route_not_found"]);
    const model = await app.inject({ method: "GET", url: "/api/v1/models/ghost", headers: as(admin) });
    expect([model.statusCode, model.json().error.code]).toEqual([404, "model_not_found"]);
    expect(model.json().error.message).toBe('no model named "ghost" in the catalog');
  });

  it("names the model a misspelt name was meant to be, when reading it and when changing it", async () => {
    await app.inject({ method: "POST", url: "/api/v1/models", headers: as(admin), payload: { name: "chat-7b", profiles: [{ engine: "vllm", source: "x" }] } });
    const read = await app.inject({ method: "GET", url: "/api/v1/models/chat7b", headers: as(admin) });
    expect([read.statusCode, read.json().error.message]).toEqual([404, 'no model named "chat7b" in the catalog (did you mean "chat-7b"?)']);
    const changed = await app.inject({ method: "POST", url: "/api/v1/models/chat7b/scale", headers: as(admin), payload: { min: 2 } });
    expect([changed.statusCode, changed.json().error.message]).toEqual([404, 'no model named "chat7b" in the catalog (did you mean "chat-7b"?)']);
  });

  it("identifies itself and its API versions on every answer", async () => {
    const response = await app.inject({ method: "GET", url: "/api/v1/version" });
    expect(response.headers["llmgw-version"]).toBe(response.json().version);
    expect(response.headers["llmgw-api"]).toBe("1");
  });
});

describe("secrets in model answers", () => {
  let store: Store;
  let app: FastifyInstance;
  const admin = newToken("admin");
  const reader = newToken("read");

  beforeAll(async () => {
    store = await openStore({ database: undefined, dataDir: temporaryDirectory("llmgw-api-secrets-") });
    const at = new Date().toISOString();
    await insertToken(store.db, { id: randomUUID(), name: "admin", role: "admin", hash: hashToken(admin) }, at);
    await insertToken(store.db, { id: randomUUID(), name: "dashboard", role: "read", hash: hashToken(reader) }, at);
    const declared = [{ entry: { name: "fixed", profiles: [{ engine: "vllm" as const, source: "x" }] }, source: "file" as const, place: "prod.yaml models[0] (fixed)" }];
    app = await buildApp({ store, catalog: new CatalogService(store, declared, "prod.yaml"), adminTokenHint: "see admin-token" });
    await app.inject({
      method: "POST",
      url: "/api/v1/models",
      headers: { authorization: `Bearer ${admin}` },
      payload: {
        name: "private",
        adapters: [{ name: "sql", source: "https://robot:adapter-pass@mirror.example/sql/" }],
        profiles: [{ engine: "vllm", source: "https://robot:s3cret@mirror.example/m/", env: { HF_TOKEN: "hf_abcdef", VLLM_LOGGING_LEVEL: "INFO", DATABASE_URL: "postgres://app:db@pa55@db.internal/app", PGPASS: "pg-secret", MY_API_KEYS: "k1,k2" }, args: ["--served-model-name", "private", "--log-sink=https://u:sinkpass@logs.example/"] }],
      },
    });
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  const secrets = ["hf_abcdef", "s3cret", "adapter-pass", "pa55", "db@pa55", "pg-secret", "k1,k2", "sinkpass"];

  it("shows an admin secrets masked by rule: secret names, URL passwords (an @ inside included), keeping the rest", async () => {
    for (const url of ["/api/v1/models/private", "/api/v1/models", "/api/v1/audit"]) {
      const text = (await app.inject({ method: "GET", url, headers: { authorization: `Bearer ${admin}` } })).body;
      for (const secret of secrets) expect(text, `${url} shows ${secret}`).not.toContain(secret);
      expect(text, url).toContain("https://robot:***@mirror.example/m/");
      expect(text, url).toContain('"DATABASE_URL":"postgres://app:***@db.internal/app"');
      expect(text, url).toContain('"--log-sink=https://u:***@logs.example/"');
      expect(text, url).toContain('"VLLM_LOGGING_LEVEL":"INFO"');
    }
  });

  it("shows a read-only token no env value at all, in models and audit", async () => {
    for (const url of ["/api/v1/models/private", "/api/v1/models", "/api/v1/audit"]) {
      const text = (await app.inject({ method: "GET", url, headers: { authorization: `Bearer ${reader}` } })).body;
      for (const secret of secrets) expect(text, `${url} shows ${secret}`).not.toContain(secret);
      expect(text, url).toContain('"VLLM_LOGGING_LEVEL":"***"');
      expect(text, url).not.toContain("db.internal");
    }
  });

  it("names the file a declared model would be edited in, and null for a runtime one", async () => {
    const view = (await app.inject({ method: "GET", url: "/api/v1/models/private", headers: { authorization: `Bearer ${reader}` } })).json();
    expect(view.declared_in).toBeNull();
    const fixed = (await app.inject({ method: "GET", url: "/api/v1/models/fixed", headers: { authorization: `Bearer ${reader}` } })).json();
    expect([fixed.source, fixed.declared_in]).toEqual(["file", "prod.yaml"]);
    const refused = (await app.inject({ method: "DELETE", url: "/api/v1/models/fixed", headers: { authorization: `Bearer ${admin}` } })).json();
    expect(refused.error.hint).toContain('Edit the entry for "fixed" in prod.yaml');
  });
});
