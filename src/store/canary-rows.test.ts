import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { storesUnderTest } from "../../test/support/postgres.js";
import { findCanary, listCanaries, makeCanaryReplicasStable, putCanary, updateCanary, type CanaryRow } from "./canary-rows.js";
import { openStore, type Store } from "./open-store.js";
import { insertReplicaIntent, listReplicaIntents, withdrawReplicaIntent } from "./reconcile-rows.js";

const row: CanaryRow = {
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

/** Canary rows and arms on replica intents, the same contract on SQLite and Postgres. */
describe.each(storesUnderTest)("canary rows on $kind", (engine) => {
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

  it("keeps one canary per model, fractions intact, and a new one replaces the ended one", async () => {
    await putCanary(store.db, row);
    await updateCanary(store.db, "qwen", { max_error_rate: 0.05, min_requests: 20, window_ms: 300_000 });
    expect(await findCanary(store.db, "qwen")).toEqual({ ...row, max_error_rate: 0.05, min_requests: 20, window_ms: 300_000 });
    await updateCanary(store.db, "qwen", { state: "aborted", ended_at: "2026-01-01T00:05:00.000Z" });
    await putCanary(store.db, { ...row, revision: "v3" });
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
