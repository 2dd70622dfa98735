import { describe, expect, it } from "vitest";
import { chat, intent, node, row } from "../../test/support/fleet-state.js";
import type { StoredReplica } from "../store/index.js";
import { fleetSnapshot } from "./fleet-snapshot.js";
import { observe, type FleetState } from "./observe.js";

const nowMs = Date.parse("2026-03-01T10:05:00.000Z");
const empty: FleetState = { models: [chat], statuses: [], nodes: [node("gpu-1"), node("gpu-2")], rows: [], intents: [], canaries: [] };

/** A member row of replica `gang` over two nodes. */
function member(gang: string, rank: number, nodeName: string, overrides: Partial<StoredReplica> = {}): StoredReplica {
  const id = rank === 0 ? gang : `${gang}.rank${rank}`;
  const base = row(id, nodeName, "gpu", overrides);
  const spec = { id, model: "chat", profile: "gpu", engine: "vllm" as const, source: "hf://org/chat", cards: [0], slots: 1, gpu_memory_utilization: 0.9, args: [], env: {}, adapters: [] };
  return { ...base, spec: { ...spec, distributed: { nodes: 2, rank, leader_address: "10.0.0.1", replica: gang } } };
}

describe("observing a replica over several nodes", () => {
  it("folds its members into one replica under the leader's id, holding cards on every member's node", () => {
    const state: FleetState = { ...empty, rows: [member("big", 0, "gpu-1"), member("big", 1, "gpu-2")], intents: [intent("big")] };
    const { observed } = observe(state, nowMs);
    expect(observed.replicas.map((replica) => [replica.id, replica.node, replica.state, replica.managed])).toEqual([["big", "gpu-1", "ready", true]]);
    expect(observed.replicas[0]?.members?.map((seen) => [seen.id, seen.rank, seen.node])).toEqual([
      ["big", 0, "gpu-1"],
      ["big.rank1", 1, "gpu-2"],
    ]);
    const snapshot = fleetSnapshot(observed, () => "standard");
    // Placement sees the gang on both nodes, under one id, as a gang (never a victim alone).
    expect(snapshot.replicas.map((held) => [held.id, held.node, held.gangNodes])).toEqual([
      ["big", "gpu-1", 2],
      ["big", "gpu-2", 2],
    ]);
  });

  it("takes the whole gang's state: a failed worker fails the replica", () => {
    const worker = member("big", 1, "gpu-2", { state: "failed" });
    const state: FleetState = { ...empty, rows: [member("big", 0, "gpu-1"), { ...worker, status: { ...worker.status, state: "failed", reason: "killed by SIGKILL" } }], intents: [intent("big")] };
    expect(observe(state, nowMs).observed.replicas.map((replica) => [replica.state, replica.reason])).toEqual([["failed", "member rank 1 on gpu-2 failed: killed by SIGKILL"]]);
  });

  it("lists a member whose leader row is gone as a stray, still holding its cards until it stops", () => {
    const state: FleetState = { ...empty, rows: [member("big", 1, "gpu-2"), row("small", "gpu-1", "gpu")], intents: [intent("small")] };
    const { observed } = observe(state, nowMs);
    expect(observed.replicas.map((replica) => replica.id)).toEqual(["small"]);
    expect(observed.strays).toEqual([{ id: "big.rank1", model: "chat", node: "gpu-2", cards: [0] }]);
    expect(fleetSnapshot(observed, () => "standard").replicas.map((held) => [held.id, held.node])).toContainEqual(["big.rank1", "gpu-2"]);
  });
});
