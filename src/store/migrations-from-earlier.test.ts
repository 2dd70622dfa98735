import { createHash } from "node:crypto";
import { Migrator, type Kysely } from "kysely";
import { afterAll, describe, expect, it } from "vitest";
import { storesUnderTest } from "../../test/support/postgres.js";
import { findNode, findReplica, readFleetRevisions, touchNode } from "./fleet-rows.js";
import { migrationProvider } from "./migrations.js";
import { listModelEntries } from "./model-rows.js";
import { insertGatewayKey, listGatewayKeys } from "./gateway-key-rows.js";
import { openStore, openUnmigrated, type Store } from "./open-store.js";
import type { Database } from "./schema.js";
import { listTokens } from "./token-rows.js";
import { sumUsage } from "./usage-rows.js";
import { listVersionChanges } from "./version-rows.js";

/**
 * A data directory (or Postgres database) made by every earlier schema opens
 * with this release and keeps its rows. Each earlier schema is built here by
 * running the migrations up to it on an empty store, then filled with the rows
 * that schema could hold, written as the release of that schema wrote them.
 */
const at = "2026-11-01T10:00:00.000Z";
const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** Rows each migration made room for, in that migration's own columns. */
const rowsAt: Record<string, (db: Kysely<Database>) => Promise<void>> = {
  "0001_catalog_tokens_audit": async (db) => {
    await db.insertInto("models").values({ name: "chat", entry: JSON.stringify({ name: "chat", class: "critical", external: { base_url: "http://127.0.0.1:9/v1" } }), created_at: at, updated_at: at }).execute();
    await db.insertInto("api_tokens").values({ id: "t1", name: "ci-bot", role: "admin", token_hash: sha256("llmgw_admin_x"), created_at: at }).execute();
    await db.insertInto("audit_events").values({ at, actor: "ci-bot", actor_user: "ana", action: "model-added", model: "chat", before: null, after: "{}" }).execute();
  },
  "0002_nodes_replicas": async (db) => {
    await db.insertInto("join_tokens").values({ id: "j1", token_hash: sha256("join"), created_at: at, created_by: "ci-bot" }).execute();
    // Before 0003 the node's credential was stored in the clear, under another column name.
    await (db as unknown as Kysely<{ nodes: Record<string, string> }>)
      .insertInto("nodes")
      .values({ name: "gpu-1", address: "http://10.0.0.1:7000", fabric: "none", labels: "{}", inventory: "{}", credential: "clear-credential", joined_at: at, last_seen_at: at })
      .execute();
    await db
      .insertInto("replicas")
      .values({ id: "r1", node: "gpu-1", model: "chat", profile: "default", engine: "vllm", cards: "[0]", spec: null, state: "ready", status: "{}", stop_requested: 0, created_at: at, updated_at: at })
      .execute();
    // Before 0011 a fetch's progress was kept inside the report.
    const fetching = { id: "r2", model: "chat", profile: "default", engine: "vllm", cards: [1], state: "fetching", since: at, progress: { fraction: 0.5, bytes_done: 5, bytes_total: 10 } };
    await db
      .insertInto("replicas")
      .values({ id: "r2", node: "gpu-1", model: "chat", profile: "default", engine: "vllm", cards: "[1]", spec: null, state: "fetching", status: JSON.stringify(fetching), stop_requested: 0, created_at: at, updated_at: at })
      .execute();
  },
  "0003_node_credential_hashes": async (db) => {
    await db.insertInto("server_key_check").values({ id: 1, verifier: "v", created_at: at }).execute();
  },
  "0004_gateway_keys_usage": async (db) => {
    await db.insertInto("gateway_keys").values({ id: "k1", name: "data-team", key_hash: sha256("llmgw_key_x"), models: '["chat"]', rpm: 100, tpm: null, expires_at: null, created_at: at, revoked_at: null }).execute();
    await db.insertInto("usage").values({ key: "data-team", model: "chat", minute: "2026-11-01T10:00Z", requests: 7, errors: 1, prompt_tokens: 70, completion_tokens: 140 }).execute();
  },
  "0005_reconcile": async (db) => {
    await db.insertInto("replica_intents").values({ id: "r1", model: "chat", managed: 1, placed_at: at, withdrawn_at: null, withdraw_reason: null }).execute();
    await db.insertInto("model_status").values({ model: "chat", demand_at: at, placement_state: "placed", placement_reason: null, last_failure: null, last_failure_at: null, failures: 0, backoff_until: null, restart_before: null, restart_in_place: 0, updated_at: at }).execute();
    await db.insertInto("node_controls").values({ node: "gpu-1", cordoned: 1, draining: 0, updated_at: at }).execute();
    await db.insertInto("events").values({ at, kind: "replica-started", model: "chat", replica: "r1", node: "gpu-1", message: "started" }).execute();
  },
  "0007_model_versions": async (db) => {
    await db.insertInto("model_versions").values({ model: "chat", from_revision: "a".repeat(40), to_revision: "b".repeat(40), kind: "update", actor: "ci-bot", actor_user: "ana", at }).execute();
  },
  "0008_canaries": async (db) => {
    await db
      .insertInto("canaries")
      .values({ model: "chat", revision: "c".repeat(40), from_revision: "b".repeat(40), weight: 0.1, replicas: 1, max_error_rate: 0.05, max_p95_ms: null, min_requests: 50, window_ms: 60_000, state: "running", decision: null, started_at: at, ended_at: null, actor: "ci-bot", actor_user: null, ended_by: null })
      .execute();
    await db.insertInto("arm_counts").values({ gateway: "g1", model: "chat", arm: "canary", slot_start: at, requests: 3, errors: 0, latency: "[1,2]" }).execute();
  },
  // 0009 adds the fleet's revision, which its triggers raise: no rows of its own to keep.
  "0009_fleet_revision": async () => {},
  // 0010 gives keys a cap of their own; the keys of before it keep the server's (checked below).
  "0010_gateway_key_max_in_flight": async () => {},
  // 0011 keeps a fetch's progress in a column of its own; a report of before it still shows its progress (checked below).
  "0011_replica_progress": async () => {},
  // 0012 keeps the planner's figures of each source as last read; a store of before it has none, and a change reads the files as before.
  "0012_source_facts": async () => {},
  // 0013 keeps where a node is reached on its fabric; a node of before it has none until its agent says.
  "0013_node_fabric_network": async () => {},
};

const levels = Object.keys(rowsAt);

/** What every level's rows must read as once the current release opened the store. */
async function expectRowsFrom(store: Store, level: number): Promise<void> {
  const reached = (name: string) => levels.indexOf(name) <= level;
  expect((await listModelEntries(store.db)).map((entry) => [entry.name, entry.class])).toEqual([["chat", "critical"]]);
  expect(await listTokens(store.db)).toEqual([{ name: "ci-bot", role: "admin", created_at: at }]);
  expect(await store.db.selectFrom("audit_events").select(["action", "model"]).execute()).toEqual([{ action: "model-added", model: "chat" }]);
  if (reached("0002_nodes_replicas")) {
    // A clear credential of before 0003 is kept only as its hash: the agent holding it still matches.
    expect(await store.db.selectFrom("nodes").select(["name", "credential_hash"]).execute()).toEqual([{ name: "gpu-1", credential_hash: sha256("clear-credential") }]);
    expect(await store.db.selectFrom("replicas").select(["id", "state"]).orderBy("id").execute()).toEqual([
      { id: "r1", state: "ready" },
      { id: "r2", state: "fetching" },
    ]);
    expect((await findReplica(store.db, "r2"))?.status.progress).toEqual({ fraction: 0.5, bytes_done: 5, bytes_total: 10 });
    expect(await store.db.selectFrom("join_tokens").select("id").execute()).toEqual([{ id: "j1" }]);
  }
  if (reached("0003_node_credential_hashes")) expect(await store.db.selectFrom("server_key_check").select("verifier").execute()).toEqual([{ verifier: "v" }]);
  if (reached("0004_gateway_keys_usage")) {
    // A key made before keys had a cap of their own has none: the server's limits.requests_per_key holds for it.
    expect((await listGatewayKeys(store.db)).map((key) => [key.name, key.models, key.rpm, key.maxInFlight])).toEqual([["data-team", ["chat"], 100, null]]);
    expect(await sumUsage(store.db, { sinceMinute: "2026-01-01T00:00Z", key: undefined, model: undefined })).toEqual([
      { key: "data-team", model: "chat", requests: 7, errors: 1, promptTokens: 70, completionTokens: 140, firstMinute: "2026-11-01T10:00Z", lastMinute: "2026-11-01T10:00Z" },
    ]);
  }
  if (reached("0005_reconcile")) {
    // 0008 gave intents an arm; an intent of before it is a stable replica.
    expect(await store.db.selectFrom("replica_intents").select(["id", "managed", "arm"]).execute()).toEqual([{ id: "r1", managed: 1, arm: null }]);
    expect(await store.db.selectFrom("node_controls").select(["node", "cordoned"]).execute()).toEqual([{ node: "gpu-1", cordoned: 1 }]);
    expect(await store.db.selectFrom("events").select("kind").execute()).toEqual([{ kind: "replica-started" }]);
    expect(await store.db.selectFrom("model_status").select("placement_state").execute()).toEqual([{ placement_state: "placed" }]);
  }
  if (reached("0007_model_versions")) expect((await listVersionChanges(store.db, "chat")).map((change) => change.kind)).toEqual(["update"]);
  // Whatever the level, the store now counts fleet changes: a replica written raises the revision the kept lists follow.
  const revision = async () => (await readFleetRevisions(store.db)).fleet;
  const before = await revision();
  await store.db.updateTable("node_controls").set({ cordoned: 0 }).execute();
  if (reached("0005_reconcile")) expect(await revision()).toBeGreaterThan(before);
  if (reached("0008_canaries")) {
    expect(await store.db.selectFrom("canaries").select(["model", "state", "weight"]).execute()).toEqual([{ model: "chat", state: "running", weight: 0.1 }]);
    expect(await store.db.selectFrom("arm_counts").select("requests").execute()).toEqual([{ requests: 3 }]);
  }
  if (reached("0002_nodes_replicas")) {
    // A node joined before 0013 reports no fabric address; one written now raises the fleet's revision.
    expect((await findNode(store.db, "gpu-1"))?.fabricNetwork).toBeUndefined();
    const beforeFabric = await revision();
    await touchNode(store.db, "gpu-1", { address: "http://10.0.0.1:7700", last_seen_at: at, fabric_network: { address: "10.1.0.1", interface: "ib0" } });
    expect((await findNode(store.db, "gpu-1"))?.fabricNetwork).toEqual({ address: "10.1.0.1", interface: "ib0" });
    expect(await revision()).toBeGreaterThan(beforeFabric);
  }
  // Whatever the level, a key made now keeps its own cap.
  await insertGatewayKey(store.db, { id: "k2", name: "batch", hash: sha256("llmgw_key_y"), models: null, rpm: null, tpm: null, maxInFlight: 1000, expiresAt: null, createdAt: at, revokedAt: null });
  expect((await listGatewayKeys(store.db)).find((key) => key.name === "batch")?.maxInFlight).toBe(1000);
}

describe.each(storesUnderTest)("a store made by each earlier schema opens with this release ($kind)", (storeUnderTest) => {
  const drops: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const drop of drops) await drop();
  });

  it.each(levels.slice(0, -1).map((name, level) => ({ name, level })))("from $name, its rows intact", async ({ name, level }) => {
    const { location, drop } = await storeUnderTest.location();
    drops.push(drop);
    const earlier = openUnmigrated(location);
    try {
      // Each release wrote its rows in its own schema; the next release's migration then carried them forward.
      const migrator = new Migrator({ db: earlier, provider: migrationProvider(storeUnderTest.kind) });
      for (const step of levels.slice(0, level + 1)) {
        expect((await migrator.migrateTo(step)).error).toBeUndefined();
        await rowsAt[step]?.(earlier);
      }
      expect((await migrator.getMigrations()).filter((migration) => migration.executedAt !== undefined).at(-1)?.name).toBe(name);
    } finally {
      await earlier.destroy();
    }
    const store = await openStore(location);
    try {
      await expectRowsFrom(store, level);
      // Up to date, and usable: the current release writes where the earlier one left off.
      await store.withCatalogLock(async () => undefined);
    } finally {
      await store.close();
    }
  });

  it("knows a row for every migration it ships, so a new migration gets its fixture here", async () => {
    const shipped = Object.keys(await migrationProvider(storeUnderTest.kind).getMigrations());
    expect(shipped).toEqual(levels);
  });
});
