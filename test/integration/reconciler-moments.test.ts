import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { defaultReconcileSettings } from "../../src/catalog/reconcile-settings.js";
import { modelEntrySchema } from "../../src/catalog/schema.js";
import { Reconciler } from "../../src/reconcile/reconciler.js";
import { CatalogService } from "../../src/services/catalog-service.js";
import { FleetService } from "../../src/services/fleet-service.js";
import { openStore, type Store } from "../../src/store/open-store.js";
import { updateModelStatus } from "../../src/store/reconcile-rows.js";
import { temporaryDirectory } from "../support/temporary-directory.js";

/**
 * A pass comes at the moment time alone changes a decision, with nothing
 * waking it: heartbeats that change nothing no longer wake the reconciler,
 * so a backoff ending or a canary gate due must not wait for the interval
 * pass. The interval and the lease are set to a minute here, so only the
 * reconciler's own timer can bring the second pass within seconds.
 */
describe("the reconciler's own moments", () => {
  let store: Store;
  let reconciler: Reconciler;
  let passes: number[];
  const silent = { info: () => undefined, warn: () => undefined };
  const settings = { ...defaultReconcileSettings, intervalMs: 60_000, leaseMs: 180_000 };

  beforeEach(async () => {
    store = await openStore({ database: undefined, dataDir: temporaryDirectory("llmgw-moments-") });
    const catalog = new CatalogService(store, [], "server.yaml");
    await catalog.add(modelEntrySchema.parse({ name: "flaky", profiles: [{ name: "default", engine: "vllm", source: "/models/flaky" }] }), { token: "admin", user: null });
    const fleet = new FleetService(store, catalog, { heartbeatDeadlineMs: 15_000, settlingWindowMs: 0, heartbeatIntervalMs: 2000, gpuMemoryUtilization: 0.9, serverEnvironment: process.env });
    reconciler = new Reconciler(store, catalog, fleet, settings, silent);
    passes = [];
  });

  afterEach(async () => {
    await reconciler.stop();
    await store.close();
  });

  it("passes again when a model's backoff ends", async () => {
    await updateModelStatus(store.db, "flaky", { failures: 1, backoff_until: new Date(Date.now() + 700).toISOString() }, new Date().toISOString());
    reconciler.onPass(async (nowMs) => {
      passes.push(nowMs);
      return undefined;
    });
    reconciler.start();
    await vi.waitFor(() => expect(passes.length).toBeGreaterThanOrEqual(2), { timeout: 5000, interval: 50 });
    const [first, second] = passes as [number, number];
    // Not before the backoff ends (a pass then would find nothing new), and not a minute later.
    expect(second - first).toBeGreaterThanOrEqual(250);
  });

  it("passes again when the pass hook (the canary gate) asks to be asked again", async () => {
    reconciler.onPass(async (nowMs) => {
      passes.push(nowMs);
      return passes.length === 1 ? nowMs + 400 : undefined;
    });
    reconciler.start();
    await vi.waitFor(() => expect(passes.length).toBe(2), { timeout: 5000, interval: 50 });
  });

  it("waits for the interval when no moment is ahead", async () => {
    reconciler.onPass(async (nowMs) => {
      passes.push(nowMs);
      return undefined;
    });
    reconciler.start();
    await vi.waitFor(() => expect(passes.length).toBe(1), { timeout: 5000, interval: 50 });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(passes).toHaveLength(1);
  });
});
