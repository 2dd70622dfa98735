import { noReplicaPreview } from "../dry-run.js";
import { randomUUID } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { modelEntrySchema } from "../../catalog/schema.js";
import { defaultReconcileSettings } from "../../catalog/reconcile-settings.js";
import { storesUnderTest } from "../../../test/support/postgres.js";
import { openStore, type Store } from "../../store/open-store.js";
import { insertToken } from "../../store/token-rows.js";
import { insertEvents } from "../../store/reconcile-rows.js";
import { addUsage } from "../../store/usage-rows.js";
import { usageMinute } from "../../protocol/gateway-keys-feed.js";
import { CatalogService } from "../../services/catalog-service.js";
import { FleetService } from "../../services/fleet-service.js";
import { Reconciler } from "../../reconcile/reconciler.js";
import { DemandService } from "../../services/demand-service.js";
import { NodeControlService } from "../../services/node-control-service.js";
import { RestartService } from "../../services/restart-service.js";
import { registerReconcileRoutes } from "../routes/reconcile.js";
import { buildApp } from "../../server/build-app.js";
import { hashToken, newToken } from "../../auth/tokens.js";

/** The lists read from the store at each request (events, audit, keys, usage), paged the same way on SQLite and Postgres. */
describe.each(storesUnderTest)("paged store lists over $kind", (engine) => {
  let store: Store;
  let drop: () => Promise<void>;
  let app: FastifyInstance;
  const admin = newToken("admin");
  const as = { authorization: `Bearer ${admin}` };
  const get = (url: string, headers: Record<string, string> = {}) => app.inject({ method: "GET", url, headers: { ...as, ...headers } });

  beforeEach(async () => {
    const { location, drop: dropDatabase } = await engine.location();
    drop = dropDatabase;
    store = await openStore(location);
    await insertToken(store.db, { id: randomUUID(), name: "admin", role: "admin", hash: hashToken(admin) }, new Date().toISOString());
    const catalog = new CatalogService(store, [], "server.yaml");
    for (const name of ["alpha", "beta"]) {
      await catalog.add(modelEntrySchema.parse({ name, profiles: [{ name: "default", engine: "vllm", source: `hf://org/${name}@main` }] }), { token: "admin", user: name === "beta" ? "carol" : null });
    }
    const fleet = new FleetService(store, catalog, { heartbeatDeadlineMs: 15_000, settlingWindowMs: 0, heartbeatIntervalMs: 2000, gpuMemoryUtilization: 0.9, serverEnvironment: process.env });
    const reconciler = new Reconciler(store, catalog, fleet, defaultReconcileSettings, { info: () => undefined, warn: () => undefined });
    const commandParts = { store, catalog, fleet, preview: noReplicaPreview, wake: () => reconciler.wake() };
    const reconcileRouteParts = {
      store,
      holder: reconciler.holder,
      demands: new DemandService(commandParts),
      restarts: new RestartService({ ...commandParts, facts: undefined }),
      nodeControls: new NodeControlService(commandParts),
    };
    app = await buildApp({ store, catalog, fleetService: fleet, adminTokenHint: "see admin-token", logger: false, registerMore: (routes) => registerReconcileRoutes(routes, reconcileRouteParts) });
    const at = "2026-01-01T00:00:00.000Z";
    await insertEvents(
      store.db,
      Array.from({ length: 7 }, (_, index) => ({
        at,
        kind: index % 2 === 0 ? "replica-started" : "replica-failed",
        model: index < 4 ? "alpha" : "beta",
        replica: `r-${index}`,
        node: index % 3 === 0 ? "node-a" : "node-b",
        message: index === 5 ? "engine ran Out Of Memory (100%_used)" : index === 6 ? "weights from https://robot:s3cret@mirror.example/m/ unreadable" : `event ${index}`,
      })),
    );
    for (const name of ["team-a", "team-b", "ops"]) await app.inject({ method: "POST", url: "/api/v1/keys", headers: as, payload: { name, ...(name === "ops" ? { models: ["beta"] } : {}) } });
    const minute = usageMinute(Date.now());
    await addUsage(store.db, [
      { key: "team-a", model: "alpha", minute, requests: 3, errors: 0, promptTokens: 10, completionTokens: 20 },
      { key: "team-a", model: "beta", minute, requests: 1, errors: 1, promptTokens: 5, completionTokens: 0 },
      { key: "team-b", model: "alpha", minute, requests: 2, errors: 0, promptTokens: 4, completionTokens: 4 },
    ]);
  });
  afterEach(async () => {
    await app.close();
    await store.close();
    await drop();
  });

  async function pageThrough(route: string, field: string, limit: number, name: (item: Record<string, unknown>) => string): Promise<string[]> {
    const names: string[] = [];
    let cursor: string | null = null;
    for (let pages = 0; pages < 20; pages += 1) {
      const separator = route.includes("?") ? "&" : "?";
      const answer = await get(`${route}${separator}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      expect(answer.statusCode, answer.body).toBe(200);
      const body = answer.json() as Record<string, Record<string, unknown>[]> & { next_cursor: string | null };
      names.push(...body[field]!.map(name));
      cursor = body.next_cursor;
      if (cursor === null) break;
    }
    return names;
  }

  it("pages back through events from the newest, each once, oldest first within a page", async () => {
    const all = (await get("/api/v1/events")).json();
    expect(Object.keys(all)).toEqual(["events"]);
    expect(all.events.map((event: { replica: string }) => event.replica)).toEqual(["r-0", "r-1", "r-2", "r-3", "r-4", "r-5", "r-6"]);
    const first = (await get("/api/v1/events?limit=3")).json();
    expect(first.events.map((event: { replica: string }) => event.replica)).toEqual(["r-4", "r-5", "r-6"]);
    const paged = await pageThrough("/api/v1/events", "events", 3, (event) => String(event.replica));
    expect([...paged].sort()).toEqual(["r-0", "r-1", "r-2", "r-3", "r-4", "r-5", "r-6"]);
  });

  it("filters events by model, node and kind, and finds text in any case, wildcards taken as text", async () => {
    const replicas = async (query: string) => ((await get(`/api/v1/events?${query}`)).json().events as { replica: string }[]).map((event) => event.replica);
    expect(await replicas("model=beta")).toEqual(["r-4", "r-5", "r-6"]);
    expect(await replicas("node=node-a")).toEqual(["r-0", "r-3", "r-6"]);
    expect(await replicas("kind=replica-failed&model=alpha")).toEqual(["r-1", "r-3"]);
    expect(await replicas("q=out%20of%20memory")).toEqual(["r-5"]);
    expect(await replicas("q=%25_used")).toEqual(["r-5"]);
    expect(await replicas("q=%25")).toEqual(["r-5"]);
  });

  it("masks a URL's password in a list sent as text, as every answer is masked", async () => {
    for (const query of ["q=mirror", "q=mirror&limit=1"]) {
      const answer = await get(`/api/v1/events?${query}`);
      expect(answer.body).not.toContain("s3cret");
      expect((answer.json().events as { message: string }[]).map((event) => event.message)).toEqual(["weights from https://robot:***@mirror.example/m/ unreadable"]);
    }
  });

  it("pages through the audit newest first, and filters it by action and actor", async () => {
    const ids = await pageThrough("/api/v1/audit", "events", 2, (event) => String(event.id));
    expect(ids).toHaveLength(5);
    expect(new Set(ids).size).toBe(5);
    expect(ids.map(Number)).toEqual([...ids.map(Number)].sort((left, right) => right - left));
    const whole = (await get("/api/v1/audit")).json();
    expect(Object.keys(whole)).toEqual(["events"]);
    expect(whole.events.map((event: { action: string }) => event.action)).toEqual(["gateway-key-created", "gateway-key-created", "gateway-key-created", "model-added", "model-added"]);
    expect((await get("/api/v1/audit?action=model-added")).json().events.map((event: { model: string }) => event.model)).toEqual(["beta", "alpha"]);
    expect((await get("/api/v1/audit?actor=carol")).json().events.map((event: { model: string }) => event.model)).toEqual(["beta"]);
    expect((await get("/api/v1/audit?q=BETA&action=model-added")).json().events).toHaveLength(1);
  });

  it("pages through both lists of keys and the usage, and filters them", async () => {
    expect(await pageThrough("/api/v1/keys", "keys", 2, (key) => String(key.name))).toEqual(["ops", "team-a", "team-b"]);
    expect(await pageThrough("/api/v1/gateway/keys", "keys", 1, (key) => String(key.name))).toEqual(["ops", "team-a", "team-b"]);
    expect(await pageThrough("/api/v1/usage", "usage", 2, (row) => `${String(row.key)}/${String(row.model)}`)).toEqual(["team-a/alpha", "team-a/beta", "team-b/alpha"]);
    const keys = async (query: string) => ((await get(`/api/v1/keys?${query}`)).json().keys as { name: string }[]).map((key) => key.name).sort();
    expect(await keys("model=alpha")).toEqual(["team-a", "team-b"]);
    expect(await keys("q=TEAM")).toEqual(["team-a", "team-b"]);
    expect(await keys("state=revoked")).toEqual([]);
    const usage = (await get("/api/v1/usage?q=beta")).json();
    expect(Object.keys(usage).sort()).toEqual(["since", "until", "usage"]);
    expect(usage.usage.map((row: { key: string }) => row.key)).toEqual(["team-a"]);
  });

  it("answers 304 while a store list is unchanged, and 200 once it changed", async () => {
    for (const route of ["/api/v1/events?limit=2", "/api/v1/audit", "/api/v1/keys", "/api/v1/gateway/keys", "/api/v1/usage"]) {
      const etag = (await get(route)).headers.etag as string;
      expect(etag, route).toMatch(/^W\//);
      expect((await get(route, { "if-none-match": etag })).statusCode, route).toBe(304);
    }
    const keysTag = (await get("/api/v1/keys")).headers.etag as string;
    await app.inject({ method: "DELETE", url: "/api/v1/keys/ops", headers: as });
    const changed = await get("/api/v1/keys", { "if-none-match": keysTag });
    expect(changed.statusCode).toBe(200);
    expect(changed.json().keys.find((key: { name: string }) => key.name === "ops").state).toBe("revoked");
  });

  it("refuses a bad limit, cursor or filter on each store list with a 400 naming it", async () => {
    for (const [url, parameter] of [
      ["/api/v1/events?limit=0", "limit"],
      ["/api/v1/events?cursor=xyz", "cursor"],
      ["/api/v1/audit?limit=2000", "limit"],
      ["/api/v1/audit?cursor=%7B%7D", "cursor"],
      ["/api/v1/keys?state=lost", "state"],
      ["/api/v1/gateway/keys?limit=-1", "limit"],
      ["/api/v1/usage?cursor=e30", "cursor"],
      ["/api/v1/usage?q=", "q"],
    ] as const) {
      const answer = await get(url);
      expect(answer.statusCode, url).toBe(400);
      expect(JSON.stringify(answer.json()), url).toContain(parameter);
    }
    // A cursor of one list (names) is not one of another (ids).
    const keysCursor = (await get("/api/v1/keys?limit=1")).json().next_cursor as string;
    const answer = await get(`/api/v1/events?cursor=${encodeURIComponent(keysCursor)}`);
    expect(answer.statusCode).toBe(400);
    expect(answer.json().error.message).toContain("cursor");
  });
});
