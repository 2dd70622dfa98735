import { randomUUID } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Inventory, ReplicaStatus } from "../../protocol/agent-protocol.js";
import { modelEntrySchema } from "../../catalog/schema.js";
import { storesUnderTest } from "../../../test/support/postgres.js";
import { openStore, type Store } from "../../store/open-store.js";
import { insertToken } from "../../store/token-rows.js";
import { findReplica, readFleetRevisions, upsertReplica } from "../../store/fleet-rows.js";
import { CatalogService } from "../../services/catalog-service.js";
import { FleetService } from "../../services/fleet-service.js";
import { buildApp } from "../../server/build-app.js";
import { hashToken, newToken } from "../../auth/tokens.js";
import { admin as calls } from "../../client/admin-calls.js";
import { ApiClient } from "../../client/api-client.js";
import type { NodeView, ReplicaView } from "../../protocol/views.js";

const inventory = (name: string, cardClass: string): Inventory => ({
  hostname: `${name}.lab`,
  gpus: [0, 1].map((index) => ({ index, uuid: `GPU-${name}-${index}`, name: cardClass, class: cardClass, memory_bytes: 48 * 1024 ** 3, fabric: name })),
  memory_bytes: 64 * 1024 ** 3,
  cpu_cores: 16,
  engines: ["vllm"],
  disk_free_bytes: 10 ** 12,
  simulated: true,
});

const ready = (id: string, model: string): ReplicaStatus => ({ id, model, profile: "default", engine: "vllm", cards: [0], state: "ready", endpoint: "http://127.0.0.1:41000", since: "2026-01-01T00:00:00.000Z" });

describe.each(storesUnderTest)("admin lists over $kind", (engine) => {
  let store: Store;
  let drop: () => Promise<void>;
  let app: FastifyInstance;
  let clock: number;
  const credentials = new Map<string, string>();
  const admin = newToken("admin");
  const as = { authorization: `Bearer ${admin}` };
  const get = (url: string, headers: Record<string, string> = {}) => app.inject({ method: "GET", url, headers: { ...as, ...headers } });
  /** What the server's own start writes before it calls an agent: a report of an id with no row is an orphan the server stops. */
  const placed = async (node: string, replicas: readonly ReplicaStatus[]) => {
    const at = new Date(clock).toISOString();
    for (const replica of replicas) {
      if (await findReplica(store.db, replica.id)) continue;
      await upsertReplica(store.db, { id: replica.id, node, status: { ...replica, state: "fetching" }, pending: true, spec: null, stop_requested: false, created_at: at, updated_at: at });
    }
  };
  const beat = async (node: string, replicas: ReplicaStatus[]) => {
    await placed(node, replicas);
    return await app.inject({ method: "POST", url: "/api/v1/agent/heartbeat", headers: { authorization: `Bearer ${credentials.get(node)}` }, payload: { protocol: 1, name: node, address: `http://${node}:7070`, replicas } });
  };

  beforeEach(async () => {
    const { location, drop: dropDatabase } = await engine.location();
    drop = dropDatabase;
    store = await openStore(location);
    clock = Date.parse("2026-01-01T00:00:00Z");
    await insertToken(store.db, { id: randomUUID(), name: "admin", role: "admin", hash: hashToken(admin) }, new Date(clock).toISOString());
    const catalog = new CatalogService(store, [], "server.yaml");
    const entries = [
      { name: "alpha", owner: "search", class: "critical", engine: "vllm" },
      { name: "beta", owner: "search", class: "standard", engine: "llamacpp" },
      { name: "gamma", owner: "ads", class: "standard", engine: "vllm" },
      { name: "delta-chat", owner: "ads", class: "opportunistic", engine: "vllm" },
    ];
    for (const entry of entries) {
      await catalog.add(modelEntrySchema.parse({ name: entry.name, owner: entry.owner, class: entry.class, profiles: [{ name: "default", engine: entry.engine, source: `hf://org/${entry.name}@main` }] }), { token: "admin", user: null });
    }
    const fleet = new FleetService(store, catalog, { heartbeatDeadlineMs: 15_000, settlingWindowMs: 20_000, heartbeatIntervalMs: 2000, gpuMemoryUtilization: 0.9, serverEnvironment: process.env }, () => clock);
    app = await buildApp({ store, catalog, fleetService: fleet, adminTokenHint: "see admin-token", logger: false });
    const { token } = await fleet.createJoinToken("admin");
    for (const [name, cardClass] of [["node-a", "l40s"], ["node-b", "h100"], ["node-c", "h100"]] as const) {
      const joined = await fleet.join({ protocol: 1, join_token: token, name, address: `http://${name}:7070`, fabric: name, labels: { rack: name === "node-a" ? "r1" : "r2" }, inventory: inventory(name, cardClass) });
      credentials.set(name, joined.credential);
    }
    expect((await beat("node-a", [ready("alpha-1", "alpha"), ready("gamma-1", "gamma")])).statusCode).toBe(200);
    expect((await beat("node-b", [ready("alpha-2", "alpha")])).statusCode).toBe(200);
    expect((await beat("node-c", [{ ...ready("beta-1", "beta"), state: "failed", endpoint: undefined, reason: "out of memory" }])).statusCode).toBe(200);
  });
  afterEach(async () => {
    await app.close();
    await store.close();
    await drop();
  });

  /** Every item of a list, read a page of `limit` at a time through next_cursor. */
  async function pageThrough(route: string, field: string, limit: number): Promise<{ names: string[]; pages: number }> {
    const names: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const separator = route.includes("?") ? "&" : "?";
      const answer = await get(`${route}${separator}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      expect(answer.statusCode).toBe(200);
      const body = answer.json() as Record<string, unknown> & { next_cursor: string | null };
      expect(body).toHaveProperty("next_cursor");
      names.push(...(body[field] as { name?: string; id?: string }[]).map((item) => item.name ?? item.id ?? ""));
      cursor = body.next_cursor;
      pages += 1;
    } while (cursor !== null && pages < 20);
    return { names, pages };
  }

  it("answers every model, node and replica without paging parameters, in the shape ctl reads, with no cursor", async () => {
    const models = (await get("/api/v1/models")).json();
    expect(Object.keys(models)).toEqual(["models"]);
    expect(models.models.map((model: { name: string }) => model.name).sort()).toEqual(["alpha", "beta", "delta-chat", "gamma"]);
    expect(models.models.find((model: { name: string }) => model.name === "alpha").replicas).toEqual({ ready: 2, desired: 2 });
    const nodes = (await get("/api/v1/nodes")).json();
    expect(Object.keys(nodes)).toEqual(["nodes"]);
    expect(nodes.nodes.map((node: { name: string }) => node.name)).toEqual(["node-a", "node-b", "node-c"]);
    const replicas = (await get("/api/v1/replicas")).json();
    expect(Object.keys(replicas)).toEqual(["replicas"]);
    expect(replicas.replicas.map((replica: { id: string }) => replica.id).sort()).toEqual(["alpha-1", "alpha-2", "beta-1", "gamma-1"]);
  });

  it("pages through models, nodes and replicas with limit and next_cursor, each item once", async () => {
    expect(await pageThrough("/api/v1/models", "models", 3)).toEqual({ names: ["alpha", "beta", "delta-chat", "gamma"], pages: 2 });
    expect(await pageThrough("/api/v1/nodes", "nodes", 1)).toEqual({ names: ["node-a", "node-b", "node-c"], pages: 3 });
    expect(await pageThrough("/api/v1/replicas", "replicas", 2)).toEqual({ names: ["alpha-1", "alpha-2", "beta-1", "gamma-1"], pages: 2 });
  });

  it("goes on after the cursor's item when items before it are added or removed between pages", async () => {
    const first = (await get("/api/v1/replicas?limit=2")).json();
    expect(first.replicas.map((replica: { id: string }) => replica.id)).toEqual(["alpha-1", "alpha-2"]);
    // node-a stops reporting alpha-1 (gone) and reports a new one that sorts first.
    await beat("node-a", [ready("aaa-1", "alpha"), ready("gamma-1", "gamma")]);
    const second = (await get(`/api/v1/replicas?limit=2&cursor=${encodeURIComponent(first.next_cursor)}`)).json();
    expect(second.replicas.map((replica: { id: string }) => replica.id)).toEqual(["beta-1", "gamma-1"]);
    expect(second.next_cursor).toBeNull();
  });

  it("filters models by state, class, owner and engine, and searches their names", async () => {
    const names = async (query: string) => ((await get(`/api/v1/models?${query}`)).json().models as { name: string }[]).map((model) => model.name).sort();
    expect(await names("owner=search")).toEqual(["alpha", "beta"]);
    expect(await names("class=standard")).toEqual(["beta", "gamma"]);
    expect(await names("engine=llamacpp")).toEqual(["beta"]);
    expect(await names("state=ready")).toEqual(["alpha", "gamma"]);
    expect(await names("q=CHAT")).toEqual(["delta-chat"]);
    expect(await names("owner=ads&class=standard")).toEqual(["gamma"]);
  });

  it("is read in full by ctl's client, which follows next_cursor from page to page", async () => {
    const client = new ApiClient(await app.listen({ host: "127.0.0.1", port: 0 }), admin);
    const nodes = await client.all(calls.nodes({ limit: 1 }), "nodes");
    expect(Object.keys(nodes)).toEqual(["nodes"]);
    expect(nodes.nodes.map((node) => node.name)).toEqual(["node-a", "node-b", "node-c"]);
    const replicas = await client.all(calls.replicas({ limit: 1, state: "ready" }), "replicas");
    expect(replicas.replicas.map((replica) => replica.id)).toEqual(["alpha-1", "alpha-2", "gamma-1"]);
  });

  it("filters nodes by state, card class and engine, and replicas by node, model and state", async () => {
    const nodes = async (query: string) => ((await get(`/api/v1/nodes?${query}`)).json().nodes as { name: string }[]).map((node) => node.name);
    expect(await nodes("class=h100")).toEqual(["node-b", "node-c"]);
    expect(await nodes("q=r1")).toEqual(["node-a"]);
    expect(await nodes("state=ready")).toEqual(["node-a", "node-b", "node-c"]);
    const replicas = async (query: string) => ((await get(`/api/v1/replicas?${query}`)).json().replicas as { id: string }[]).map((replica) => replica.id).sort();
    expect(await replicas("node=node-a")).toEqual(["alpha-1", "gamma-1"]);
    expect(await replicas("model=alpha")).toEqual(["alpha-1", "alpha-2"]);
    expect(await replicas("state=failed")).toEqual(["beta-1"]);
    expect(await replicas("q=memory")).toEqual(["beta-1"]);
    expect(await replicas("model=alpha&limit=1")).toEqual(["alpha-1"]);
  });

  it("refuses a bad limit, cursor, filter or unknown parameter with a 400 naming it", async () => {
    for (const [url, parameter] of [
      ["/api/v1/models?limit=0", "limit"],
      ["/api/v1/models?limit=5000", "limit"],
      ["/api/v1/nodes?limit=two", "limit"],
      ["/api/v1/replicas?cursor=not-a-cursor", "cursor"],
      ["/api/v1/models?state=sleepy", "state"],
      ["/api/v1/models?engine=ollama", "engine"],
      ["/api/v1/nodes?state=gone", "state"],
      ["/api/v1/replicas?colour=red", "colour"],
      ["/api/v1/models?q=", "q"],
    ] as const) {
      const answer = await get(url);
      expect(answer.statusCode, url).toBe(400);
      expect(JSON.stringify(answer.json()), url).toContain(parameter);
    }
  });

  it("answers 304 to If-None-Match while a list is unchanged, and the new list once it changes", async () => {
    for (const route of ["/api/v1/models", "/api/v1/nodes", "/api/v1/replicas", "/api/v1/models?owner=ads&limit=1"]) {
      const first = await get(route);
      const etag = first.headers.etag as string;
      expect(etag, route).toMatch(/^W\/"/);
      const again = await get(route, { "if-none-match": etag });
      expect(again.statusCode, route).toBe(304);
      expect(again.body).toBe("");
    }
    const replicasTag = (await get("/api/v1/replicas")).headers.etag as string;
    const modelsTag = (await get("/api/v1/models")).headers.etag as string;
    await beat("node-b", [{ ...ready("alpha-2", "alpha"), state: "draining" }]);
    const changed = await get("/api/v1/replicas", { "if-none-match": replicasTag });
    expect(changed.statusCode).toBe(200);
    expect(changed.json().replicas.find((replica: { id: string }) => replica.id === "alpha-2").state).toBe("draining");
    const models = await get("/api/v1/models", { "if-none-match": modelsTag });
    expect(models.statusCode).toBe(200);
    expect(models.json().models.find((model: { name: string }) => model.name === "alpha").replicas.ready).toBe(1);
    // A catalog change is seen at once too.
    const modelsTagNow = models.headers.etag as string;
    await app.inject({ method: "POST", url: "/api/v1/models/gamma/owner", headers: as, payload: { owner: "search" } });
    const owned = await get("/api/v1/models?owner=search", { "if-none-match": modelsTagNow });
    expect(owned.json().models.map((model: { name: string }) => model.name).sort()).toEqual(["alpha", "beta", "gamma"]);
  });

  it("writes nothing for a heartbeat that reports nothing new, and still shows when the node was heard", async () => {
    const revision = (await readFleetRevisions(store.db)).fleet;
    const tag = (await get("/api/v1/replicas")).headers.etag as string;
    clock += 2000;
    await beat("node-a", [ready("alpha-1", "alpha"), ready("gamma-1", "gamma")]);
    expect((await readFleetRevisions(store.db)).fleet).toBe(revision);
    expect((await get("/api/v1/replicas", { "if-none-match": tag })).statusCode).toBe(304);
    const node = (await get("/api/v1/nodes")).json().nodes.find((candidate: { name: string }) => candidate.name === "node-a");
    expect(node.last_seen_at).toBe(new Date(clock).toISOString());
    // The store is told coarsely, so other servers sharing it see the node alive: here after a third of the deadline.
    const stored = () => store.db.selectFrom("nodes").select("last_seen_at").where("name", "=", "node-a").executeTakeFirstOrThrow();
    expect((await stored()).last_seen_at).toBe("2026-01-01T00:00:00.000Z");
    clock += 5000;
    await beat("node-a", [ready("alpha-1", "alpha"), ready("gamma-1", "gamma")]);
    expect((await stored()).last_seen_at).toBe(new Date(clock).toISOString());
    expect((await readFleetRevisions(store.db)).fleet).toBe(revision);
  });

  it("shows a fetch's progress in the replica list, while the models and the fleet's revision stay as they were", async () => {
    const fetching = (fraction: number): ReplicaStatus => ({ ...ready("delta-1", "delta-chat"), state: "fetching", endpoint: undefined, progress: { fraction, bytes_done: fraction * 100, bytes_total: 100 } });
    const failed: ReplicaStatus = { ...ready("beta-1", "beta"), state: "failed", endpoint: undefined, reason: "out of memory" };
    await beat("node-c", [failed, fetching(0.1)]);
    const before = await readFleetRevisions(store.db);
    const modelsTag = (await get("/api/v1/models")).headers.etag as string;
    const replicasTag = (await get("/api/v1/replicas")).headers.etag as string;
    clock += 2000;
    await beat("node-c", [failed, fetching(0.6)]);
    const after = await readFleetRevisions(store.db);
    expect(after.fleet).toBe(before.fleet);
    expect(after.progress).toBeGreaterThan(before.progress);
    expect((await get("/api/v1/models", { "if-none-match": modelsTag })).statusCode).toBe(304);
    const replicas = await get("/api/v1/replicas", { "if-none-match": replicasTag });
    expect(replicas.statusCode).toBe(200);
    expect(replicas.json().replicas.find((replica: ReplicaView) => replica.id === "delta-1").progress).toEqual({ fraction: 0.6, bytes_done: 60, bytes_total: 100 });
    // Kept apart in the row, so the report's own column (which row 1 of the revision follows) did not change.
    const row = await store.db.selectFrom("replicas").select(["status", "progress"]).where("id", "=", "delta-1").executeTakeFirstOrThrow();
    expect(JSON.parse(row.status)).not.toHaveProperty("progress");
    expect(JSON.parse(row.progress ?? "null")).toEqual({ fraction: 0.6, bytes_done: 60, bytes_total: 100 });
    // Built again from the list kept whole, once per move: each read shows the progress of now.
    const progressOf = async () => (await get("/api/v1/replicas")).json().replicas.find((replica: ReplicaView) => replica.id === "delta-1").progress;
    await beat("node-c", [failed, fetching(0.9)]);
    expect(await progressOf()).toEqual({ fraction: 0.9, bytes_done: 90, bytes_total: 100 });
    await beat("node-c", [failed, { ...fetching(0.9), progress: undefined }]);
    expect(await progressOf()).toBeNull();
    expect((await readFleetRevisions(store.db)).fleet).toBe(before.fleet);
    // Its fetch done, it starts: a change the models show.
    await beat("node-c", [failed, { ...ready("delta-1", "delta-chat"), state: "starting", endpoint: undefined }]);
    expect((await readFleetRevisions(store.db)).fleet).toBeGreaterThan(after.fleet);
    expect((await get("/api/v1/replicas")).json().replicas.find((replica: ReplicaView) => replica.id === "delta-1").progress).toBeNull();
  });

  it("shows a beat another server sharing the store took within a second", async () => {
    const seen = async () => (await get("/api/v1/nodes")).json().nodes.find((node: NodeView) => node.name === "node-a").last_seen_at;
    expect(await seen()).toBe("2026-01-01T00:00:00.000Z");
    clock += 10_000;
    const other = new FleetService(store, new CatalogService(store, [], "server.yaml"), { heartbeatDeadlineMs: 15_000, settlingWindowMs: 20_000, heartbeatIntervalMs: 2000, gpuMemoryUtilization: 0.9, serverEnvironment: process.env }, () => clock);
    await other.heartbeat(`Bearer ${credentials.get("node-a")}`, { protocol: 1, name: "node-a", address: "http://node-a:7070", replicas: [ready("alpha-1", "alpha"), ready("gamma-1", "gamma")] });
    clock += 1000;
    expect(await seen()).toBe(new Date(clock - 1000).toISOString());
  });

  it("shows a node lost once its deadline passes, with no write to tell it", async () => {
    const before = (await get("/api/v1/nodes?state=lost")).json();
    expect(before.nodes).toEqual([]);
    clock += 10_000;
    await beat("node-a", [ready("alpha-1", "alpha"), ready("gamma-1", "gamma")]);
    clock += 10_000;
    const lost = ((await get("/api/v1/nodes?state=lost")).json().nodes as { name: string }[]).map((node) => node.name);
    expect(lost).toEqual(["node-b", "node-c"]);
    const alpha = (await get("/api/v1/models?q=alpha")).json().models[0];
    expect(alpha.replicas.ready).toBe(1);
  });
});
