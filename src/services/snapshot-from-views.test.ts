import { describe, expect, it } from "vitest";
import { resolveModel } from "../catalog/catalog-model.js";
import type { NodeView, ReplicaView } from "../protocol/views.js";
import { snapshotFromViews } from "./snapshot-from-views.js";

const GiB = 1024 ** 3;

function node(name: string, overrides: Partial<NodeView> = {}): NodeView {
  return {
    name,
    state: "ready",
    address: "http://127.0.0.1:1",
    hostname: name,
    fabric: "pcie",
    labels: {},
    gpus: [{ index: 0, uuid: "GPU-0", name: "NVIDIA L40S", class: "l40s", memory_bytes: 48 * GiB, memory_used_bytes: null, memory_foreign_bytes: null, fabric: "pcie", replica: null }],
    memory_bytes: 64 * GiB,
    cpu_cores: 16,
    engines: ["vllm", "llamacpp", "an-engine-from-a-newer-agent"],
    disk_free_bytes: 0,
    simulated: true,
    joined_at: "",
    last_seen_at: "",
    replicas: [],
    cordoned: false,
    draining: false,
    ...overrides,
  };
}

function replica(id: string, state: ReplicaView["state"], overrides: Partial<ReplicaView> = {}): ReplicaView {
  return { id, model: "chat", profile: "cpu", node: "a", engine: "llamacpp", gpus: [], state, endpoint: null, progress: null, reason: null, pid: null, adopted: false, since: "", created_at: "", arm: "stable", llama_cpp: null, members: null, ...overrides };
}

describe("the fleet as placement sees it, from the API's views", () => {
  const chat = resolveModel({ name: "chat", profiles: [{ name: "cpu", engine: "llamacpp", source: "/m.gguf", memory_gb: 8, cpu_cores: 4 }] }, "runtime");

  it("marks nodes that take nothing new with the reason, and keeps only the engines placement knows", () => {
    const snapshot = snapshotFromViews([node("a"), node("b", { cordoned: true }), node("c", { draining: true, cordoned: true }), node("d", { state: "lost" })], [], [chat]);
    expect(snapshot.nodes.map((each) => [each.name, each.schedulable, each.unschedulableReason])).toEqual([
      ["a", true, undefined],
      ["b", false, "cordoned"],
      ["c", false, "draining"],
      ["d", false, "lost"],
    ]);
    expect(snapshot.nodes[0]?.engines).toEqual(["vllm", "llamacpp"]);
    expect(snapshot.nodes[0]?.cards).toEqual([{ index: 0, cardClass: "l40s", memoryBytes: 48 * GiB, fabric: "pcie" }]);
  });

  it("counts the replicas that hold resources, with what their profile reserves, and not the stopped or failed ones", () => {
    const snapshot = snapshotFromViews(
      [node("a")],
      [replica("r1", "ready"), replica("r2", "stopped"), replica("r3", "failed"), replica("r4", "draining", { model: "gone", profile: "gpu", gpus: [0] })],
      [chat],
    );
    expect(snapshot.replicas.map((held) => [held.id, held.cards, held.memoryBytes, held.cpuCores, held.modelClass])).toEqual([
      ["r1", [], 8 * GiB, 4, "standard"],
      // A model that has left the catalog still holds its cards until its engine stops.
      ["r4", [0], 0, 0, "opportunistic"],
    ]);
  });
});
