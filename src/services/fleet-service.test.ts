import http from "node:http";
import type { AddressInfo } from "node:net";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Inventory, ReplicaStatus } from "../protocol/agent-protocol.js";
import { modelEntrySchema } from "../catalog/schema.js";
import { refusal } from "../../test/support/refusal.js";
import { replicaStatus } from "../../test/support/replica-status.js";
import { findReplica, upsertReplica } from "../store/fleet-rows.js";
import { openStore, type Store } from "../store/open-store.js";
import { storesUnderTest } from "../../test/support/postgres.js";
import { waitFor } from "../../test/support/fake-engine.js";
import { CatalogService } from "./catalog-service.js";
import { FleetService } from "./fleet-service.js";
import type { FleetLog } from "./fleet/heartbeat-intake.js";

/** The fleet's store behaviour, run against SQLite and Postgres, with a controllable clock. */
const engines = storesUnderTest;

const inventory: Inventory = {
  hostname: "host-a",
  gpus: [
    { index: 0, uuid: "GPU-0", name: "NVIDIA L40S", class: "l40s", memory_bytes: 48 * 1024 ** 3, fabric: "node-a" },
    { index: 1, uuid: "GPU-1", name: "NVIDIA L40S", class: "l40s", memory_bytes: 48 * 1024 ** 3, fabric: "node-a" },
    { index: 2, uuid: "GPU-2", name: "NVIDIA H100 80GB HBM3", class: "h100", memory_bytes: 80 * 1024 ** 3, fabric: "node-a" },
  ],
  memory_bytes: 64 * 1024 ** 3,
  cpu_cores: 16,
  engines: ["vllm"],
  disk_free_bytes: 10 ** 12,
  simulated: false,
};

const status = replicaStatus;


describe.each(engines)("fleet over $kind", (engine) => {
  let store: Store;
  let drop: () => Promise<void>;
  let clock: number;
  let fleet: FleetService;
  let credential: string;

  /**
   * What the server's own start does before it calls an agent: a pending row. A report of an id
   * with no row is an orphan the server stops, so the tests that beat replicas in place them first.
   */
  const placed = async (node: string, replicas: readonly ReplicaStatus[]) => {
    const at = new Date(clock).toISOString();
    for (const replica of replicas) {
      if (replica.state === "stopped" || (await findReplica(store.db, replica.id))) continue;
      await upsertReplica(store.db, { id: replica.id, node, status: { ...replica, state: "fetching" }, pending: true, spec: null, stop_requested: false, created_at: at, updated_at: at });
    }
  };

  const beat = async (replicas: ReplicaStatus[], token = credential) => {
    await placed("node-a", replicas);
    return await fleet.heartbeat(`Bearer ${token}`, { protocol: 1, name: "node-a", address: "http://10.0.0.5:7070", replicas });
  };

  beforeEach(async () => {
    const { location, drop: dropDatabase } = await engine.location();
    drop = dropDatabase;
    store = await openStore(location);
    clock = Date.parse("2026-01-01T00:00:00Z");
    const catalog = new CatalogService(store, [], "server.yaml");
    await catalog.add(modelEntrySchema.parse({ name: "tiny", context: 4096, profiles: [{ name: "pair", engine: "vllm", source: "hf://org/tiny@main", gpus: 2, gpu_class: "l40s" }] }), { token: "admin", user: null });
    fleet = new FleetService(store, catalog, { heartbeatDeadlineMs: 15_000, settlingWindowMs: 20_000, heartbeatIntervalMs: 2000, gpuMemoryUtilization: 0.9, serverEnvironment: process.env }, () => clock);
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

  it("tells the reconciler of a beat only when it changes a decision: a state, a node back from silence", async () => {
    let told = 0;
    fleet.whenHeartbeatDecisive(() => (told += 1));
    await beat([status("r1", "ready")]);
    expect(told).toBe(1);
    clock += 2000;
    await beat([status("r1", "ready")]);
    expect(told).toBe(1);
    clock += 30_000;
    await beat([status("r1", "ready")]);
    expect(told).toBe(2);
  });

  it("names the next moment a node's state changes with no beat: its deadline, or the settling window's end", async () => {
    // Joined at the start, before the settling window of 20 s closes.
    expect(fleet.nextNodeStateChangeMs(await fleet.listNodes())).toBe(clock + 15_001);
    clock += 18_000;
    expect(fleet.nextNodeStateChangeMs(await fleet.listNodes())).toBe(clock + 2000);
    await beat([]);
    clock += 3000;
    expect(fleet.nextNodeStateChangeMs(await fleet.listNodes())).toBe(clock - 3000 + 15_001);
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
    const restarted = new FleetService(store, new CatalogService(store, [], "server.yaml"), { heartbeatDeadlineMs: 15_000, settlingWindowMs: 20_000, heartbeatIntervalMs: 2000, gpuMemoryUtilization: 0.9, serverEnvironment: process.env }, () => clock);
    expect((await restarted.getNode("node-a")).state).toBe("settling");
    expect((await restarted.getReplica("r1")).state).toBe("ready");
    clock += 21_000;
    expect((await restarted.getNode("node-a")).state).toBe("lost");
  });

  it("refuses a forged credential for a known node and any credential for an unknown one with the same answer, so node names cannot be probed", async () => {
    const known = await refusal(() => beat([], "llmgw_node_forged"));
    const unknown = await refusal(() => fleet.heartbeat(`Bearer ${credential}`, { protocol: 1, name: "node-z", address: "http://x:1", replicas: [] }));
    expect(known.code).toBe("unauthorized");
    expect(JSON.stringify(unknown.toBody()).replaceAll("node-z", "NAME")).toBe(JSON.stringify(known.toBody()).replaceAll("node-a", "NAME"));
  });

  const joinAs = async (name: string, address: string) => {
    const { token } = await fleet.createJoinToken("admin");
    return await fleet.join({ protocol: 1, join_token: token, name, address, fabric: name, labels: {}, inventory });
  };

  it("refuses a second agent on the same host under a live node's name, and lets it join once that node has gone quiet", async () => {
    await beat([]);
    const second = await refusal(() => joinAs("node-a", "http://10.0.0.5:7071"));
    expect(second).toMatchObject({ code: "name_taken", message: expect.stringContaining("node name node-a is taken by the agent at http://10.0.0.5:7070") });
    // The first agent keeps its name and credential.
    expect(await beat([])).toMatchObject({ protocol: 1 });
    expect((await fleet.getNode("node-a")).address).toBe("http://10.0.0.5:7070");
    clock += 16_000;
    const again = await joinAs("node-a", "http://10.0.0.5:7071");
    expect(again.credential).not.toBe(credential);
    expect((await refusal(() => beat([]))).code).toBe("unauthorized");
    expect((await fleet.getNode("node-a")).address).toBe("http://10.0.0.5:7071");
  });

  it("refuses a join under a live node's name from another machine, and allows it once that node has gone quiet", async () => {
    await beat([]);
    const taken = await refusal(() => joinAs("node-a", "http://10.0.0.6:7070"));
    expect(taken).toMatchObject({ code: "name_taken", message: expect.stringContaining("node name node-a is taken by the agent at http://10.0.0.5:7070") });
    expect(taken.hint).toContain("Give this agent its own --name");
    expect(await beat([])).toMatchObject({ protocol: 1 });
    clock += 16_000;
    await joinAs("node-a", "http://10.0.0.6:7070");
    expect((await fleet.getNode("node-a")).address).toBe("http://10.0.0.6:7070");
  });

  it("refuses hand-picked cards that repeat, miscount, are of another class or are in use, naming the card", async () => {
    await beat([status("r1", "ready", { cards: [1] })]);
    const start = (cards: number[]) => refusal(() => fleet.startReplica({ model: "tiny", node: "node-a", cards }));
    expect(await start([0, 0])).toMatchObject({ code: "invalid_input", message: expect.stringContaining("card 0 is named twice") });
    expect(await start([0])).toMatchObject({ code: "invalid_input", message: expect.stringContaining("tiny/pair needs 2 cards; 1 given") });
    expect(await start([0, 2])).toMatchObject({ code: "invalid_input", message: expect.stringContaining("card 2 on node node-a is a h100, but tiny/pair needs l40s") });
    const busy = await start([0, 1]);
    expect(busy).toMatchObject({ code: "cards_busy", message: expect.stringContaining("card 1 on node node-a is used by replica r1") });
    expect(busy.hint).toContain("free:");
  });

  it("places nothing on a card an engine still holds while its agent stops it (an engine found without its record, reported draining)", async () => {
    await beat([status("orphan-r", "draining", { cards: [0], reason: "engine vllm for tiny on cards 0 of node node-a was running without a record the agent could adopt" })]);
    expect((await fleet.getNode("node-a")).gpus[0]?.replica).toBe("orphan-r");
    const busy = await refusal(() => fleet.startReplica({ model: "tiny", node: "node-a" }));
    expect(busy).toMatchObject({ code: "cards_busy", message: expect.stringContaining("free: 1 (l40s), 2 (h100)") });
    // Reported stopped only once its processes are gone: the card is free again.
    await beat([status("orphan-r", "stopped", { cards: [0] })]);
    expect((await fleet.getNode("node-a")).gpus[0]?.replica).toBeNull();
  });

  it("tells a node that has no cards of the class apart from one whose cards are busy, naming the cards it has", async () => {
    const catalog = new CatalogService(store, [], "server.yaml");
    await catalog.add(modelEntrySchema.parse({ name: "on-a100", profiles: [{ engine: "vllm", source: "x", gpu_class: "a100" }] }), { token: "admin", user: null });
    await catalog.add(modelEntrySchema.parse({ name: "wide", profiles: [{ engine: "vllm", source: "x", gpu_class: "l40s", gpus: 4 }] }), { token: "admin", user: null });
    const none = await refusal(() => fleet.startReplica({ model: "on-a100", node: "node-a" }));
    expect(none).toMatchObject({ code: "cards_missing", message: "node node-a has no a100 cards (it has 2× l40s, 1× h100); on-a100/vllm needs 1 a100 card" });
    expect(none.hint).not.toContain("Stop a replica");
    const few = await refusal(() => fleet.startReplica({ model: "wide", node: "node-a" }));
    expect(few).toMatchObject({ code: "cards_missing", message: expect.stringContaining("node node-a has only 2 l40s cards in all") });
    // Busy is still busy: the node has the cards, another replica holds them.
    await beat([status("r1", "ready", { cards: [1] })]);
    expect(await refusal(() => fleet.startReplica({ model: "tiny", node: "node-a" }))).toMatchObject({ code: "cards_busy" });
  });

  it("refuses to start a profile over several nodes by hand, or an id that reads as a gang's member, before asking an agent", async () => {
    const catalog = new CatalogService(store, [], "server.yaml");
    await catalog.add(modelEntrySchema.parse({ name: "big", profiles: [{ name: "two-nodes", engine: "vllm", source: "x", gpu_class: "l40s", gpus: 2, nodes: 2 }] }), { token: "admin", user: null });
    expect(await refusal(() => fleet.startReplica({ model: "big", node: "node-a" }))).toMatchObject({
      code: "invalid_profile",
      message: "big/two-nodes spans 2 nodes: its replicas are placed as gangs by the reconciler, not started on one node by hand",
      hint: expect.stringContaining("llmgw ctl model scale big --min 1"),
    });
    expect(await refusal(() => fleet.startReplica({ model: "tiny", node: "node-a", id: "mine.rank1" }))).toMatchObject({ code: "invalid_input", message: expect.stringContaining("mine.rank1") });
  });

  it("places no gang whose leader's node reports no address on its fabric, and says which agent needs --fabric-address", async () => {
    const catalog = new CatalogService(store, [], "server.yaml");
    await catalog.add(modelEntrySchema.parse({ name: "big", profiles: [{ name: "two-nodes", engine: "vllm", source: "x", gpu_class: "l40s", gpus: 2, nodes: 2 }] }), { token: "admin", user: null });
    await joinAs("node-b", "http://10.0.0.7:7070");
    const members = [
      { node: "node-a", cards: [0, 1] },
      { node: "node-b", cards: [0, 1] },
    ];
    const refused = await refusal(() => fleet.startPlaced({ model: "big", profile: "two-nodes", node: "node-a", cards: [0, 1], members }));
    expect(refused).toMatchObject({ code: "fabric_address_missing", message: expect.stringContaining("node node-a reports no address on its fabric (node-a)"), hint: expect.stringContaining("--fabric-address") });
    // Refused before anything was written: no member's row is left behind.
    expect(await fleet.listReplicas()).toEqual([]);
  });

  it("shows a replica over two nodes once, with its members, in the list and when read by id (a fetch's progress rebuilds it so)", async () => {
    await joinAs("node-b", "http://10.0.0.7:7070");
    const at = new Date(clock).toISOString();
    for (const [rank, node] of [[0, "node-a"], [1, "node-b"]] as const) {
      const id = rank === 0 ? "big" : "big.rank1";
      const spec = { id, model: "tiny", profile: "pair", engine: "vllm" as const, source: "hf://org/tiny@main", cards: [0, 1], slots: 1, gpu_memory_utilization: 0.9, args: [], env: {}, adapters: [] };
      await upsertReplica(store.db, {
        id,
        node,
        status: status(id, "fetching", { cards: [0, 1], progress: { fraction: 0.5, bytes_done: 5, bytes_total: 10 } }),
        pending: false,
        spec: { ...spec, distributed: { nodes: 2, rank, leader_address: "10.0.0.5", replica: "big" } },
        stop_requested: false,
        created_at: at,
        updated_at: at,
      });
    }
    const members = (view: { members: { rank: number; node: string }[] | null } | undefined) => view?.members?.map((member) => [member.rank, member.node]);
    const listed = await fleet.listReplicas();
    expect(listed.map((view) => view.id)).toEqual(["big"]);
    expect(members(listed[0])).toEqual([[0, "node-a"], [1, "node-b"]]);
    const byId = await fleet.replicasById(["big", "big.rank1"]);
    expect(byId.map((view) => [view.id, view.state])).toEqual([["big", "fetching"]]);
    expect(members(byId[0])).toEqual([[0, "node-a"], [1, "node-b"]]);
    expect(members(await fleet.getReplica("big"))).toEqual([[0, "node-a"], [1, "node-b"]]);
  });

  it("refuses a replica id that already exists on any node, before asking an agent", async () => {
    await beat([status("r1", "ready", { cards: [2] })]);
    await joinAs("node-b", "http://10.0.0.7:7070");
    const conflict = await refusal(() => fleet.startReplica({ model: "tiny", node: "node-b", id: "r1" }));
    expect(conflict).toMatchObject({ code: "replica_conflict", message: expect.stringContaining("replica r1 already exists on node node-a") });
    expect((await fleet.getReplica("r1")).node).toBe("node-a");
  });

  it("keeps a replica id another node reports on the node that has it, and logs the conflict", async () => {
    const other = await joinAs("node-b", "http://10.0.0.7:7070");
    const logged: { facts: Record<string, unknown>; message: string }[] = [];
    const log: FleetLog = { info: () => undefined, warn: (facts, message) => logged.push({ facts, message }) };
    const beatFromB = () => fleet.heartbeat(`Bearer ${other.credential}`, { protocol: 1, name: "node-b", address: "http://10.0.0.7:7070", replicas: [status("r1", "ready", { cards: [2] })] }, log);
    await beat([status("r1", "ready")]);
    await beatFromB();
    await beat([status("r1", "ready")]);
    await beatFromB();
    expect(await fleet.getReplica("r1")).toMatchObject({ node: "node-a", gpus: [0] });
    const nodeB = await fleet.getNode("node-b");
    expect(nodeB.replicas).toEqual([]);
    expect(nodeB.gpus[2]?.replica).toBeNull();
    expect(logged).toContainEqual({ facts: { replica: "r1", node: "node-b", recorded_on: "node-a" }, message: "replica-conflict-ignored" });
  });

  it("stops a replica on a lost node when the node returns, instead of taking it back as ready", async () => {
    const deletes: string[] = [];
    const agentApi = http.createServer((request, response) => {
      if (request.method === "DELETE") deletes.push(request.url ?? "");
      response.writeHead(202, { "content-type": "application/json" }).end(JSON.stringify({ protocol: 1, replica: status("r1", "draining") }));
    });
    await new Promise<void>((resolve) => agentApi.listen(0, "127.0.0.1", resolve));
    try {
      const address = `http://127.0.0.1:${(agentApi.address() as AddressInfo).port}`;
      const joined = await joinAs("node-s", address);
      const beatFromS = async (replicas: ReplicaStatus[]) => {
        await placed("node-s", replicas);
        return await fleet.heartbeat(`Bearer ${joined.credential}`, { protocol: 1, name: "node-s", address, replicas });
      };
      await beatFromS([status("r1", "ready")]);
      clock += 30_000;
      const stopped = await fleet.stopReplica("r1", false);
      // Said as what it is: on a lost node, presumed still running on its cards, its stop waiting for the node.
      expect(stopped).toMatchObject({ id: "r1", state: "lost", endpoint: null, reason: expect.stringContaining("its agent is told to stop it when the node reports it again") });
      expect(stopped.reason).toContain("as far as anyone knows the replica still runs there, holding cards 0");
      expect((await fleet.listReplicas()).map((listed) => listed.state)).toEqual(["lost"]);
      // Given up, it no longer counts toward its model (its replacement does).
      expect((await fleet.replicaCounts()).get("tiny")).toEqual({ ready: 0, desired: 0 });
      expect(deletes).toEqual([]);
      // The node returns with the engine still running.
      await beatFromS([status("r1", "ready", { endpoint: "http://127.0.0.1:41000" })]);
      expect(await fleet.getReplica("r1")).toMatchObject({ state: "draining", endpoint: null });
      expect((await fleet.replicaCounts()).get("tiny")).toEqual({ ready: 0, desired: 0 });
      await waitFor(() => deletes.length > 0, 10_000, "the stop sent to the returning agent");
      expect(deletes).toEqual(["/agent/v1/replicas/r1"]);
      await beatFromS([status("r1", "stopped")]);
      expect(await fleet.listReplicas()).toEqual([]);
    } finally {
      agentApi.closeAllConnections();
      await new Promise<void>((resolve) => agentApi.close(() => resolve()));
    }
  });

  it("clears a failed replica on a lost node at once: nothing runs to be told", async () => {
    await beat([status("r1", "failed", { reason: "engine exited" })]);
    clock += 30_000;
    expect(await fleet.stopReplica("r1", false)).toMatchObject({ id: "r1", state: "failed", endpoint: null });
    expect(await fleet.listReplicas()).toEqual([]);
  });

  it("writes only the replicas whose report changed, and still touches the node", async () => {
    await beat([status("r1", "ready", { endpoint: "http://127.0.0.1:41000" }), status("r2", "starting", { cards: [1] })]);
    const before = await store.db.selectFrom("replicas").select(["id", "updated_at"]).orderBy("id").execute();
    clock += 2_000;
    await beat([status("r1", "ready", { endpoint: "http://127.0.0.1:41000" }), status("r2", "ready", { cards: [1] })]);
    const after = await store.db.selectFrom("replicas").select(["id", "updated_at"]).orderBy("id").execute();
    expect(after[0]).toEqual(before[0]);
    expect(after[1]?.updated_at).not.toBe(before[1]?.updated_at);
    expect((await fleet.getNode("node-a")).last_seen_at).toBe(new Date(clock).toISOString());
  });

  it("answers every view whatever text the stored rows hold", async () => {
    const text = fc.oneof(fc.string({ maxLength: 40 }), fc.json({ maxDepth: 2 }), fc.constantFrom("{", "[]", "null", '{"gpus":[{"index":"x"}]}', '"ready"'));
    await fc.assert(
      fc.asyncProperty(text, text, text, text, fc.string({ maxLength: 12 }), async (inventory, labels, cards, replicaStatus, state) => {
        await store.db.deleteFrom("replicas").execute();
        await store.db.updateTable("nodes").set({ inventory, labels, last_seen_at: state }).where("name", "=", "node-a").execute();
        await store.db
          .insertInto("replicas")
          .values({ id: "odd", node: "node-a", model: "tiny", profile: "pair", engine: state, cards, spec: replicaStatus, state, status: replicaStatus, stop_requested: 0, created_at: state, updated_at: state })
          .execute();
        await fleet.listNodes();
        await fleet.getNode("node-a");
        await fleet.listReplicas();
        await fleet.getReplica("odd");
        await fleet.replicaCounts();
        await fleet.inventoryNodes();
      }),
      { numRuns: 40 },
    );
  });
});
