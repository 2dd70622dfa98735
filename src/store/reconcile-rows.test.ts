import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { storesUnderTest } from "../../test/support/postgres.js";
import { findCanary, listCanaries, makeCanaryReplicasStable, putCanary, updateCanary, type CanaryRow } from "./canary-rows.js";
import { readFleetRevisions } from "./fleet-rows.js";
import { openStore, type Store } from "./open-store.js";
import {
  findModelStatus,
  holdLease,
  insertEvents,
  insertReplicaIntent,
  listEvents,
  listReplicaIntents,
  readLease,
  releaseLease,
  trimEvents,
  updateModelStatus,
  withdrawReplicaIntent,
} from "./reconcile-rows.js";

const canaryRow: CanaryRow = {
  model: "qwen",
  revision: "v2",
  from_revision: "main",
  weight: 12.5,
  replicas: 1,
  max_error_rate: null,
  max_p95_ms: null,
  min_requests: null,
  window_ms: null,
  state: "running",
  decision: null,
  started_at: "2026-01-01T00:00:00.000Z",
  ended_at: null,
  actor: "admin",
  actor_user: "alice",
  ended_by: null,
};

const at = (seconds: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, seconds)).toISOString();

/** The reconciler's rows and canaries, the same contract on SQLite and Postgres. */
describe.each(storesUnderTest)("reconcile rows on $kind", (engine) => {
  let store: Store;
  let drop: () => Promise<void>;

  beforeEach(async () => {
    const fresh = await engine.location();
    drop = fresh.drop;
    store = await openStore(fresh.location);
  });

  afterEach(async () => {
    await store.close();
    await drop();
  });

  it("gives the lease to one holder at a time, renews it for the holder, and lets another take it once expired", async () => {
    expect(await holdLease(store.db, "server-a", at(0), at(15))).toBe(true);
    expect(await holdLease(store.db, "server-b", at(1), at(16))).toBe(false);
    expect(await holdLease(store.db, "server-a", at(10), at(25))).toBe(true);
    expect(await holdLease(store.db, "server-b", at(20), at(35))).toBe(false);
    expect(await holdLease(store.db, "server-b", at(26), at(41))).toBe(true);
    expect(await readLease(store.db)).toEqual({ holder: "server-b", expires_at: at(41) });
    // The old holder, back from a pause, cannot act any more.
    expect(await holdLease(store.db, "server-a", at(27), at(42))).toBe(false);
  });

  it("lets two servers race for a free lease and gives it to exactly one", async () => {
    const results = await Promise.all(["a", "b", "c", "d"].map((holder) => holdLease(store.db, holder, at(0), at(15))));
    expect(results.filter(Boolean)).toHaveLength(1);
  });

  it("frees the lease at a clean stop, for the next server at once", async () => {
    await holdLease(store.db, "server-a", at(0), at(15));
    await releaseLease(store.db, "server-b");
    expect(await holdLease(store.db, "server-b", at(1), at(16))).toBe(false);
    await releaseLease(store.db, "server-a");
    expect(await holdLease(store.db, "server-b", at(1), at(16))).toBe(true);
  });

  it("keeps the newest events only, and reads them by model and after an id", async () => {
    await insertEvents(
      store.db,
      Array.from({ length: 12 }, (_, index) => ({ at: at(index), kind: "replica-started", model: index % 2 === 0 ? "even" : "odd", replica: `r-${index}`, node: "gpu-1", message: `started ${index}` })),
    );
    await trimEvents(store.db, 5);
    const kept = await listEvents(store.db, { limit: 100 });
    expect(kept.map((event) => event.message)).toEqual(["started 7", "started 8", "started 9", "started 10", "started 11"]);
    expect((await listEvents(store.db, { model: "even", limit: 100 })).map((event) => event.replica)).toEqual(["r-8", "r-10"]);
    expect((await listEvents(store.db, { afterId: kept[3]?.id, limit: 100 })).map((event) => event.replica)).toEqual(["r-11"]);
    expect((await listEvents(store.db, { since: at(10), limit: 100 })).map((event) => event.replica)).toEqual(["r-10", "r-11"]);
  });

  it("writes only the model status fields given", async () => {
    await updateModelStatus(store.db, "qwen", { demand_at: at(1) }, at(1));
    await updateModelStatus(store.db, "qwen", { failures: 2, last_failure: "engine exited", last_failure_at: at(2) }, at(2));
    expect(await findModelStatus(store.db, "qwen")).toMatchObject({ demand_at: at(1), failures: 2, last_failure: "engine exited", placement_state: null, updated_at: at(2) });
  });

  it("raises the fleet's revision for a placement change, and not for a demand_at write, which no view shows", async () => {
    const revision = async () => (await readFleetRevisions(store.db)).fleet;
    await updateModelStatus(store.db, "qwen", { placement_state: "unplaced" }, at(1));
    const placed = await revision();
    await updateModelStatus(store.db, "qwen", { demand_at: at(2) }, at(2));
    expect(await revision()).toBe(placed);
    await updateModelStatus(store.db, "qwen", { placement_reason: "no room" }, at(3));
    expect(await revision()).toBeGreaterThan(placed);
  });

  it("keeps the first withdrawal's time, so a drain waits from when the replica left routing", async () => {
    await insertReplicaIntent(store.db, { id: "qwen-1", model: "qwen", managed: 1, placed_at: at(0), withdrawn_at: null, withdraw_reason: null });
    await withdrawReplicaIntent(store.db, "qwen-1", "qwen", at(5), "restarting");
    await withdrawReplicaIntent(store.db, "qwen-1", "qwen", at(9), "again");
    expect(await listReplicaIntents(store.db)).toEqual([{ id: "qwen-1", model: "qwen", managed: 1, placed_at: at(0), withdrawn_at: at(5), withdraw_reason: "restarting", arm: null }]);
  });

  it("keeps one canary per model, fractions intact, and a new one replaces the ended one", async () => {
    await putCanary(store.db, canaryRow);
    await updateCanary(store.db, "qwen", { max_error_rate: 0.05, min_requests: 20, window_ms: 300_000 });
    expect(await findCanary(store.db, "qwen")).toEqual({ ...canaryRow, max_error_rate: 0.05, min_requests: 20, window_ms: 300_000 });
    await updateCanary(store.db, "qwen", { state: "aborted", ended_at: "2026-01-01T00:05:00.000Z" });
    await putCanary(store.db, { ...canaryRow, revision: "v3" });
    expect((await listCanaries(store.db)).map((canary) => [canary.revision, canary.state])).toEqual([["v3", "running"]]);
  });

  it("turns a promoted canary's live replicas into stable ones placed now, and leaves withdrawn ones as they are", async () => {
    const placed = "2026-01-01T00:00:00.000Z";
    await insertReplicaIntent(store.db, { id: "stable-1", model: "qwen", managed: 1, placed_at: placed, withdrawn_at: null, withdraw_reason: null });
    await insertReplicaIntent(store.db, { id: "canary-1", model: "qwen", managed: 1, placed_at: placed, withdrawn_at: null, withdraw_reason: null, arm: "canary" });
    await insertReplicaIntent(store.db, { id: "canary-2", model: "qwen", managed: 1, placed_at: placed, withdrawn_at: null, withdraw_reason: null, arm: "canary" });
    await withdrawReplicaIntent(store.db, "canary-2", "qwen", "2026-01-01T00:01:00.000Z", "failed");
    expect(await makeCanaryReplicasStable(store.db, "qwen", "2026-01-01T00:02:00.000Z")).toBe(1);
    const intents = new Map((await listReplicaIntents(store.db)).map((intent) => [intent.id, intent]));
    expect(intents.get("stable-1")).toMatchObject({ arm: null, placed_at: placed });
    expect(intents.get("canary-1")).toMatchObject({ arm: null, placed_at: "2026-01-01T00:02:00.000Z" });
    expect(intents.get("canary-2")).toMatchObject({ arm: "canary" });
  });
});
