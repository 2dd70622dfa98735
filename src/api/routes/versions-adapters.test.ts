import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { temporaryDirectory } from "../../../test/support/temporary-directory.js";
import { insertApiTokens } from "../../../test/support/api-tokens.js";
import { buildApp } from "../../server/build-app.js";
import { AdapterService } from "../../services/adapter-service.js";
import { CatalogService } from "../../services/catalog-service.js";
import { VersionService } from "../../services/version-service.js";
import { openStore, type Store } from "../../store/open-store.js";
import { registerAdapterRoutes } from "./adapters.js";
import { registerVersionRoutes } from "./versions.js";

/** The routes' own checks at the edge; what the services decide is tested beside them. */
describe("the adapters and versions routes", () => {
  let store: Store;
  let app: FastifyInstance;
  let admin = "";
  let reader = "";
  let as: (token: string) => { authorization: string };

  beforeAll(async () => {
    store = await openStore({ database: undefined, dataDir: temporaryDirectory("llmgw-versions-api-") });
    ({ admin, reader, as } = await insertApiTokens(store));
    const at = new Date().toISOString();
    const catalog = new CatalogService(store, [], "server.yaml");
    const noRestart = async () => ({ restart_before: at, in_place: false, replicas: 0 });
    const noFleet = { liveReplicasWithSpecs: async () => [], changeAdapterOnReplica: async () => undefined };
    app = await buildApp({
      store,
      catalog,
      adminTokenHint: "see admin-token",
      registerMore: (routes) => {
        registerVersionRoutes(routes, new VersionService(store, catalog, noRestart, () => ({ hubEndpoint: "http://127.0.0.1:9" })));
        registerAdapterRoutes(routes, new AdapterService(store, catalog, noFleet, noRestart, () => ({})));
      },
    });
    await app.inject({ method: "POST", url: "/api/v1/models", headers: as(admin), payload: { name: "chat", profiles: [{ engine: "vllm", source: "hf://org/chat@abcdef1" }] } });
  });

  afterAll(async () => {
    await app.close();
    await store.close();
  });

  it("shows the origin a model follows even when only its profiles name the repository", async () => {
    const shown = await app.inject({ method: "GET", url: "/api/v1/models/chat/origin", headers: as(reader) });
    expect(shown.json()).toEqual({ model: "chat", origin: null, repository: "org/chat", revision: "abcdef1" });
  });

  it("refuses an origin in no form llmgw fetches, and a revision with characters no hub allows, naming the field", async () => {
    const origin = await app.inject({ method: "POST", url: "/api/v1/models/chat/origin", headers: as(admin), payload: { origin: "ftp://mirror/chat" } });
    expect(origin.statusCode).toBe(400);
    expect(origin.json().error).toMatchObject({ code: "invalid_input", message: expect.stringContaining("origin: source \"ftp://mirror/chat\"") });
    const revision = await app.inject({ method: "POST", url: "/api/v1/models/chat/update", headers: as(admin), payload: { to: "main; rm -rf" } });
    expect(revision.statusCode).toBe(400);
    expect(revision.json().error.message).toContain("to");
  });

  it("lets a read-only token read history and adapters but not update, roll back or add", async () => {
    expect((await app.inject({ method: "GET", url: "/api/v1/models/chat/history", headers: as(reader) })).json()).toEqual({ model: "chat", revision: "abcdef1", changes: [] });
    expect((await app.inject({ method: "GET", url: "/api/v1/models/chat/adapters", headers: as(reader) })).json()).toEqual({ model: "chat", adapters: [] });
    for (const [method, url] of [["POST", "/api/v1/models/chat/update"], ["POST", "/api/v1/models/chat/rollback"], ["POST", "/api/v1/models/chat/adapters"], ["DELETE", "/api/v1/models/chat/adapters/x"]] as const) {
      expect((await app.inject({ method, url, headers: as(reader), payload: {} })).statusCode, `${method} ${url}`).toBe(403);
    }
  });

  it("says the hub did not answer when it cannot be reached, and which model does not exist", async () => {
    const unreachable = await app.inject({ method: "POST", url: "/api/v1/models/chat/update", headers: as(admin), payload: {} });
    expect(unreachable.statusCode).toBe(422);
    expect(unreachable.json().error).toMatchObject({ code: "source_unreadable", message: expect.stringContaining("org/chat@main via http://127.0.0.1:9") });
    const missing = await app.inject({ method: "POST", url: "/api/v1/models/nothing/rollback", headers: as(admin), payload: {} });
    expect(missing.json().error.code).toBe("model_not_found");
  });

  it("refuses an adapter body with a key it does not know, and removing an adapter the model lacks", async () => {
    const unknown = await app.inject({ method: "POST", url: "/api/v1/models/chat/adapters", headers: as(admin), payload: { name: "sql", source: "/a", rank: 8 } });
    expect(unknown.statusCode).toBe(400);
    const absent = await app.inject({ method: "DELETE", url: "/api/v1/models/chat/adapters/sql", headers: as(admin) });
    expect(absent.statusCode).toBe(404);
    expect(absent.json().error).toMatchObject({ code: "adapter_not_found", message: "model chat has no adapter sql" });
  });
});
