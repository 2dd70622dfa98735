import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Inventory, ReplicaStatus } from "../agent/protocol.js";
import { DomainError } from "../errors/domain-error.js";
import { openStore, type Store } from "../store/open-store.js";
import { storesUnderTest } from "../../test/support/postgres.js";
import { CatalogService } from "./catalog-service.js";
import { FleetService } from "./fleet-service.js";

/** The fleet's store behaviour, run against SQLite and Postgres (STYLE 6), with a controllable clock. */
const engines = storesUnderTest;

const inventory: Inventory = {
  hostname: "host-a",
  gpus: [{ index: 0, uuid: "GPU-0", name: "NVIDIA L40S", class: "l40s", memory_bytes: 48 * 1024 ** 3, fabric: "node-a" }],
  memory_bytes: 64 * 1024 ** 3,
  cpu_cores: 16,
  engines: ["vllm"],
  disk_free_bytes: 10 ** 12,
  simulated: false,
};

const status = (id: string, state: ReplicaStatus["state"], extra: Partial<ReplicaStatus> = {}): ReplicaStatus => ({
  id,
  model: "tiny",
  profile: "default",
  engine: "vllm",
  cards: [0],
  state,
  since: new Date(0).toISOString(),
  ...extra,
});

async function refusal(run: () => Promise<unknown>): Promise<DomainError> {
  try {
    await run();
  } catch (error) {
    if (error instanceof DomainError) return error;
    throw error;
  }
  throw new Error("expected a refusal");
}

describe.each(engines)("fleet over $kind", (engine) => {
  let store: Store;
  let drop: () => Promise<void>;
  let clock: number;
  let fleet: FleetService;
  let credential: string;

  const beat = (replicas: ReplicaStatus[], token = credential) =>
    fleet.heartbeat(`Bearer ${token}`, { protocol: 1, name: "node-a", address: "http://10.0.0.5:7070", replicas });

  beforeEach(async () => {
    const { location, drop: dropDatabase } = await engine.location();
    drop = dropDatabase;
    store = await openStore(location);
    clock = Date.parse("2026-01-01T00:00:00Z");
    fleet = new FleetService(store, new CatalogService(store, [], "server.yaml"), { heartbeatDeadlineMs: 15_000, settlingWindowMs: 20_000, heartbeatIntervalMs: 2000, gpuMemoryUtilization: 0.9 }, () => clock);
    const { token } = await fleet.createJoinToken("admin");
    const joined = await fleet.join({ protocol: 1, join_token: token, name: "node-a", address: "http://10.0.0.5:7070", fabric: "node-a", labels: { rack: "1" }, inventory });
    credential = joined.credential;
  });
  afterEach(async () => {
    await store.close();
    await drop();
  });

  it("records reported replicas, with the engine's endpoint at the node's host", async () => {
    await beat([status("r1", "ready", { endpoint: "http://127.0.0.1:41000", pid: 4242 })]);
    const [replica] = await fleet.listReplicas();
    expect(replica).toMatchObject({ id: "r1", node: "node-a", state: "ready", endpoint: "http://10.0.0.5:41000", pid: 4242, gpus: [0] });
    expect((await fleet.getNode("node-a")).gpus[0]?.replica).toBe("r1");
  });

  it("adopts replicas it never started, as a server that lost its state would find them", async () => {
    await beat([status("from-before", "ready", { adopted: true })]);
    expect(await fleet.listReplicas({ model: "tiny" })).toMatchObject([{ id: "from-before", adopted: true }]);
  });

  it("forgets a replica reported stopped", async () => {
    await beat([status("r1", "ready")]);
    await beat([status("r1", "stopped")]);
    expect(await fleet.listReplicas()).toEqual([]);
  });

  it("fails a replica its agent stopped reporting, after a grace for heartbeats in flight", async () => {
    await beat([status("r1", "ready")]);
    await beat([]);
    expect((await fleet.getReplica("r1")).state).toBe("ready");
    clock += 11_000;
    await beat([]);
    expect(await fleet.getReplica("r1")).toMatchObject({ state: "failed", reason: expect.stringContaining("no longer reports this replica") });
  });

  it("calls a silent node lost after the deadline, and its replicas lost with it", async () => {
    await beat([status("r1", "ready")]);
    clock += 30_000;
    expect((await fleet.getNode("node-a")).state).toBe("lost");
    expect(await fleet.getReplica("r1")).toMatchObject({ state: "lost", reason: expect.stringContaining("node node-a has not been heard from") });
  });

  it("after a restart, waits a settling window before calling a node lost", async () => {
    await beat([status("r1", "ready")]);
    clock += 60_000;
    const restarted = new FleetService(store, new CatalogService(store, [], "server.yaml"), { heartbeatDeadlineMs: 15_000, settlingWindowMs: 20_000, heartbeatIntervalMs: 2000, gpuMemoryUtilization: 0.9 }, () => clock);
    expect((await restarted.getNode("node-a")).state).toBe("settling");
    expect((await restarted.getReplica("r1")).state).toBe("ready");
    clock += 21_000;
    expect((await restarted.getNode("node-a")).state).toBe("lost");
  });

  it("refuses a heartbeat with another node's credential, and one from a node that never joined", async () => {
    expect((await refusal(() => beat([], "llmgw_node_forged"))).code).toBe("unauthorized");
    const unknown = await refusal(() => fleet.heartbeat(`Bearer ${credential}`, { protocol: 1, name: "node-z", address: "http://x:1", replicas: [] }));
    expect(unknown.code).toBe("node_not_found");
  });

  it("replaces the credential when a node joins again", async () => {
    const { token } = await fleet.createJoinToken("admin");
    const again = await fleet.join({ protocol: 1, join_token: token, name: "node-a", address: "http://10.0.0.6:7070", fabric: "node-a", labels: {}, inventory });
    expect(again.credential).not.toBe(credential);
    expect((await refusal(() => beat([]))).code).toBe("unauthorized");
    expect((await fleet.getNode("node-a")).address).toBe("http://10.0.0.6:7070");
  });
});
