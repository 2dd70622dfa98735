import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Inventory, ReplicaStatus } from "../protocol/agent-protocol.js";
import { modelEntrySchema } from "../catalog/schema.js";
import { replicaStatus } from "../../test/support/replica-status.js";
import { findReplica, upsertReplica } from "../store/fleet-rows.js";
import { openStore, type Store } from "../store/open-store.js";
import { storesUnderTest } from "../../test/support/postgres.js";
import { CatalogService } from "../services/catalog-service.js";
import { FleetService } from "../services/fleet-service.js";
import { loadingEstimateRefreshMs, RoutingTableSource } from "./routing-table-source.js";

const inventory: Inventory = {
  hostname: "host-a",
  gpus: [{ index: 0, uuid: "GPU-0", name: "NVIDIA H100 80GB HBM3", class: "h100", memory_bytes: 80 * 1024 ** 3, fabric: "node-a" }],
  memory_bytes: 64 * 1024 ** 3,
  cpu_cores: 16,
  engines: ["vllm"],
  disk_free_bytes: 10 ** 12,
  simulated: false,
};

/**
 * The table is rebuilt only when what it is built from changed; each kind of
 * change below must still reach it, and a tick with no change must not read
 * the fleet whole.
 */
describe.each(storesUnderTest)("the routing table over $kind", (engine) => {
  let store: Store;
  let drop: () => Promise<void>;
  let clock: number;
  let catalog: CatalogService;
  let fleet: FleetService;
  let source: RoutingTableSource;
  let credential: string;

  const beat = async (replicas: ReplicaStatus[]) => {
    const at = new Date(clock).toISOString();
    for (const replica of replicas) {
      if (replica.state === "stopped" || (await findReplica(store.db, replica.id))) continue;
      await upsertReplica(store.db, { id: replica.id, node: "node-a", status: { ...replica, state: "fetching" }, pending: true, spec: null, stop_requested: false, created_at: at, updated_at: at });
    }
    await fleet.heartbeat(`Bearer ${credential}`, { protocol: 1, name: "node-a", address: "http://127.0.0.1:7070", replicas });
  };
  const routed = () => source.current.models.find((model) => model.name === "tiny")?.replicas.map((replica) => replica.id);

  beforeEach(async () => {
    const { location, drop: dropDatabase } = await engine.location();
    drop = dropDatabase;
    store = await openStore(location);
    clock = Date.now();
    catalog = new CatalogService(store, [], "server.yaml");
    await catalog.add(modelEntrySchema.parse({ name: "tiny", profiles: [{ name: "default", engine: "vllm", source: "hf://org/tiny@main" }] }), { token: "admin", user: null });
    fleet = new FleetService(store, catalog, { heartbeatDeadlineMs: 15_000, settlingWindowMs: 0, heartbeatIntervalMs: 2000, gpuMemoryUtilization: 0.9 }, () => clock);
    const { token } = await fleet.createJoinToken("admin");
    credential = (await fleet.join({ protocol: 1, join_token: token, name: "node-a", address: "http://127.0.0.1:7070", fabric: "node-a", labels: {}, inventory })).credential;
    source = new RoutingTableSource(catalog, fleet, (error) => {
      throw error;
    });
    await source.refresh();
  });
  afterEach(async () => {
    source.stop();
    await store.close();
    await drop();
  });

  it("hands every gateway server.yaml's weights for routing by cache with the table", async () => {
    expect(source.current.cache_routing).toBeUndefined();
    const weighted = new RoutingTableSource(catalog, fleet, (error) => {
      throw error;
    }, 500, undefined, undefined, { prefix: 5, queue: 0.5, cache: 1, cacheFull: 0.9 });
    await weighted.refresh();
    expect(weighted.current.cache_routing).toEqual({ prefix_weight: 5, queue_weight: 0.5, cache_weight: 1, cache_full: 0.9 });
    expect(weighted.current.models.map((model) => model.name)).toEqual(["tiny"]);
    weighted.stop();
  });

  it("follows replicas, node states and the catalog, and leaves the fleet unread while none of them changed", async () => {
    expect(routed()).toEqual([]);
    await beat([replicaStatus("r1", "ready", { endpoint: "http://127.0.0.1:41000" })]);
    await source.refresh();
    expect(routed()).toEqual(["r1"]);

    const revision = source.current.revision;
    const read = vi.spyOn(fleet, "routingReplicas");
    await beat([replicaStatus("r1", "ready", { endpoint: "http://127.0.0.1:41000" })]); // "still here": nothing the table shows
    await source.refresh();
    expect(read).not.toHaveBeenCalled();
    expect(source.current.revision).toBe(revision);

    await catalog.add(modelEntrySchema.parse({ name: "other", profiles: [{ name: "default", engine: "vllm", source: "hf://org/other@main" }] }), { token: "admin", user: null });
    await source.refresh();
    expect(source.current.models.map((model) => model.name).sort()).toEqual(["other", "tiny"]);

    // The node falls silent past the deadline: its state changes with the clock alone, and its replica leaves the table.
    clock += 60_000;
    await source.refresh();
    expect(routed()).toEqual([]);
    expect(read).toHaveBeenCalled();
  });

  it("moves a fetch's loading estimate with its progress and the clock, without reading the fleet whole", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      // Estimates move on the table's few-second boundaries: start just past one, so the steps
      // below land where they mean to (a random start put +5 s and +5.5 s on either side of one).
      clock = Math.ceil(clock / loadingEstimateRefreshMs) * loadingEstimateRefreshMs + 100;
      vi.setSystemTime(clock);
      const since = new Date(clock - 10_000).toISOString();
      const fetching = (fraction: number) => replicaStatus("r1", "fetching", { since, progress: { fraction, bytes_done: fraction * 100, bytes_total: 100 } });
      const eta = () => source.current.models.find((model) => model.name === "tiny")?.loading_eta_s;
      await beat([fetching(0.25)]);
      await source.refresh();
      // 10 s for a quarter: 30 s more at that rate, then the engine's 20 s load.
      expect(eta()).toBe(50);

      const read = vi.spyOn(fleet, "routingReplicas");
      const revision = source.current.revision;
      await beat([fetching(0.5)]);
      vi.setSystemTime(clock + 5_000);
      await source.refresh();
      // 15 s for a half: 15 s more, then 20 s.
      expect(eta()).toBe(35);
      expect(source.current.revision).toBeGreaterThan(revision);
      expect(read).not.toHaveBeenCalled();

      // Within the same few seconds nothing is worked out again; once they pass, the clock alone moves it.
      vi.setSystemTime(clock + 5_500);
      const unchanged = source.current.revision;
      await source.refresh();
      expect(source.current.revision).toBe(unchanged);
      vi.setSystemTime(clock + 20_000);
      await source.refresh();
      expect(eta()).toBe(50);

      // A change of state is a whole build again: ready, it is routed and its estimate is gone.
      await beat([replicaStatus("r1", "ready", { endpoint: "http://127.0.0.1:41000" })]);
      await source.refresh();
      expect(read).toHaveBeenCalled();
      expect(routed()).toEqual(["r1"]);
      expect(eta()).toBeUndefined();
    } finally {
      vi.useRealTimers();
    }
  });

  it("drops a replica that stops being ready at the next build", async () => {
    await beat([replicaStatus("r1", "ready", { endpoint: "http://127.0.0.1:41000" })]);
    await source.refresh();
    expect(routed()).toEqual(["r1"]);
    await beat([replicaStatus("r1", "failed", { reason: "engine exited" })]);
    await source.refresh();
    expect(routed()).toEqual([]);
  });
});
