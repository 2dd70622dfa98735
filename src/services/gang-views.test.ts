import { describe, expect, it } from "vitest";
import { row } from "../../test/support/fleet-state.js";
import type { ReplicaView } from "../protocol/index.js";
import type { StoredReplica } from "../store/index.js";
import { foldGangViews } from "./gang-views.js";
import { replicaView } from "./fleet-views.js";

function member(gang: string, rank: number, nodeName: string, state: StoredReplica["state"] = "ready"): StoredReplica {
  const id = rank === 0 ? gang : `${gang}.rank${rank}`;
  const base = row(id, nodeName, "gpu");
  const spec = { id, model: "chat", profile: "gpu", engine: "vllm" as const, source: "hf://org/chat", cards: [0], slots: 1, gpu_memory_utilization: 0.9, args: [], env: {}, adapters: [] };
  const endpoint = rank === 0 ? { endpoint: "http://127.0.0.1:8000" } : {};
  return { ...base, state, status: { ...base.status, state, pid: 100 + rank, ...endpoint }, spec: { ...spec, distributed: { nodes: 2, rank, leader_address: "10.0.0.1", replica: gang } } };
}
const entries = (rows: StoredReplica[]) => rows.map((stored) => ({ row: stored, view: replicaView(stored, undefined, "ready") }));
const shown = (views: { view: ReplicaView }[]) => views.map(({ view }) => [view.id, view.state, view.endpoint, view.members?.map((each) => [each.rank, each.node, each.state]) ?? null]);

describe("the replica list with replicas over several nodes", () => {
  it("shows a gang once, as its leader with every member by rank, and a one-node replica as before", () => {
    expect(shown(foldGangViews(entries([member("big", 0, "gpu-1"), member("big", 1, "gpu-2"), row("small", "gpu-3", "gpu")])))).toEqual([
      [
        "big",
        "ready",
        "http://127.0.0.1:8000",
        [
          [0, "gpu-1", "ready"],
          [1, "gpu-2", "ready"],
        ],
      ],
      ["small", "ready", null, null],
    ]);
  });

  it("routes to no gang whose members are not all ready: no endpoint while a worker starts", () => {
    const [gang] = foldGangViews(entries([member("big", 0, "gpu-1"), member("big", 1, "gpu-2", "starting")]));
    expect([gang?.view.state, gang?.view.endpoint]).toEqual(["starting", null]);
  });

  it("shows a member whose leader is gone on its own while it stops", () => {
    expect(shown(foldGangViews(entries([member("big", 1, "gpu-2", "stopped")])))).toEqual([["big.rank1", "stopped", null, null]]);
  });
});
