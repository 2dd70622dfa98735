import { randomUUID } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { temporaryDirectory } from "../../../test/support/temporary-directory.js";
import { hashToken, newToken } from "../../auth/tokens.js";
import { startHubServer, type HubServer } from "../../hub/local-hub.js";
import { writePresetCheckpoints } from "../../demo/preset-checkpoints.js";
import type { PresetView } from "../../protocol/views.js";
import { buildApp } from "../../server/build-app.js";
import { CatalogService } from "../../services/catalog-service.js";
import { openStore, type Store } from "../../store/open-store.js";
import { insertToken } from "../../store/token-rows.js";

describe("the presets API", () => {
  let store: Store;
  let hub: HubServer;
  let app: FastifyInstance;
  const admin = newToken("admin");
  const reader = newToken("read");
  const as = (token: string) => ({ authorization: `Bearer ${token}` });

  const appReadingHubAt = async (hubEndpoint: string) =>
    buildApp({
      store,
      catalog: new CatalogService(store, [], "server.yaml"),
      adminTokenHint: "see admin-token",
      plan: { hubEndpoint, hubToken: () => undefined, gpuMemoryUtilization: 0.9 },
    });

  beforeAll(async () => {
    store = await openStore({ database: undefined, dataDir: temporaryDirectory("llmgw-presets-api-") });
    const at = new Date().toISOString();
    await insertToken(store.db, { id: randomUUID(), name: "admin", role: "admin", hash: hashToken(admin) }, at);
    await insertToken(store.db, { id: randomUUID(), name: "dashboard", role: "read", hash: hashToken(reader) }, at);
    hub = await startHubServer({ repositories: await writePresetCheckpoints(temporaryDirectory("llmgw-presets-hub-")) });
    app = await appReadingHubAt(hub.url);
  });

  afterAll(async () => {
    await app.close();
    await hub.close();
    await store.close();
  });

  it("lists every preset with what its profiles need, and says nothing runs it on a server no node has joined", async () => {
    const listed = await app.inject({ method: "GET", url: "/api/v1/presets", headers: as(admin) });
    expect(listed.statusCode).toBe(200);
    const presets = (listed.json() as { presets: PresetView[] }).presets;
    const qwen = presets.find((preset) => preset.name === "qwen2.5-7b-instruct") as PresetView;
    expect(qwen).toMatchObject({ tasks: ["chat"], licence: { name: "Apache-2.0" }, runs_on: null, added_as: [] });
    expect(qwen.why_not).toMatch(/0 of 0 nodes|no node/);
    expect(qwen.profiles.map((profile) => [profile.name, profile.unreadable])).toEqual([
      ["gpu", null],
      ["cpu", null],
    ]);
    // bf16 weights of 7.6B parameters, and the llama.cpp host's memory: weights plus every slot's KV cache.
    expect(qwen.profiles[0]?.weights_bytes).toBeGreaterThan(15e9);
    expect(qwen.profiles[1]?.planned_memory_bytes).toBeGreaterThan(qwen.profiles[1]?.weights_bytes ?? Number.POSITIVE_INFINITY);
  });

  it("adds a preset with an empty body, marked with the preset in the model", async () => {
    const added = await app.inject({ method: "POST", url: "/api/v1/presets/llama-3.1-8b", headers: as(admin) });
    expect(added.statusCode).toBe(201);
    expect(added.json()).toMatchObject({ name: "llama-3.1-8b", preset: "llama-3.1-8b", source: "runtime" });
    const shown = await app.inject({ method: "GET", url: "/api/v1/models/llama-3.1-8b", headers: as(reader) });
    expect(shown.json()).toMatchObject({ preset: "llama-3.1-8b" });
    const one = await app.inject({ method: "GET", url: "/api/v1/presets/llama-3.1-8b", headers: as(admin) });
    expect(one.json()).toMatchObject({ name: "llama-3.1-8b", added_as: ["llama-3.1-8b"] });
  });

  it("refuses a body with an unknown key or a name that is not a model name, naming the field", async () => {
    const misspelt = await app.inject({ method: "POST", url: "/api/v1/presets/qwen2.5-7b-instruct", headers: as(admin), payload: { nmae: "chat" } });
    expect(misspelt.statusCode).toBe(400);
    expect(misspelt.json().error).toMatchObject({ code: "unknown_key", message: expect.stringContaining('did you mean "name"') });
    const badName = await app.inject({ method: "POST", url: "/api/v1/presets/qwen2.5-7b-instruct", headers: as(admin), payload: { name: "chat model!" } });
    expect(badName.statusCode).toBe(400);
    expect(badName.json().error).toMatchObject({ code: "invalid_input", message: expect.stringContaining("name") });
  });

  it("answers 404 for an unknown preset, listing the known ones", async () => {
    for (const request of [
      { method: "POST" as const, url: "/api/v1/presets/gpt-5" },
      { method: "GET" as const, url: "/api/v1/presets/gpt-5" },
    ]) {
      const missing = await app.inject({ ...request, headers: as(admin) });
      expect(missing.statusCode).toBe(404);
      expect(missing.json().error).toMatchObject({ code: "preset_not_found", message: expect.stringContaining("qwen2.5-7b-instruct") });
    }
    const typo = await app.inject({ method: "GET", url: "/api/v1/presets/qwen2.5-7b-instrct", headers: as(admin) });
    expect(typo.json().error.message).toContain('no preset named "qwen2.5-7b-instrct" (did you mean "qwen2.5-7b-instruct"?)');
  });

  it("refuses a read-only token, saying why listing presets needs an admin token", async () => {
    const listed = await app.inject({ method: "GET", url: "/api/v1/presets", headers: as(reader) });
    expect(listed.statusCode).toBe(403);
    expect(listed.json().error.message).toContain("reads each preset's source from the hub");
    const added = await app.inject({ method: "POST", url: "/api/v1/presets/qwen2.5-7b-instruct", headers: as(reader) });
    expect(added.statusCode).toBe(403);
  });

  it("still lists the presets when the hub cannot be reached, saying so per profile", async () => {
    const closed = await startHubServer({ repositories: {} });
    await closed.close();
    const offline = await appReadingHubAt(closed.url);
    try {
      const listed = await offline.inject({ method: "GET", url: "/api/v1/presets", headers: as(admin) });
      expect(listed.statusCode).toBe(200);
      const qwen = (listed.json() as { presets: PresetView[] }).presets.find((preset) => preset.name === "qwen2.5-7b-instruct") as PresetView;
      expect(qwen.profiles[0]).toMatchObject({ weights_bytes: null, bytes_per_card: null, unreadable: expect.stringContaining("Qwen/Qwen2.5-7B-Instruct") });
    } finally {
      await offline.close();
    }
  });
});
