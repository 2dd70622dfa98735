import { describe, expect, it } from "vitest";
import { resolveModel } from "../catalog/catalog-model.js";
import type { NodeCardView, NodeView, ReplicaView } from "../protocol/views.js";
import { cardMemoryView } from "./card-memory-view.js";

const GiB = 1024 ** 3;

const gpu = (index: number, overrides: Partial<NodeCardView> = {}): NodeCardView => ({
  index,
  uuid: `GPU-${index}`,
  name: "NVIDIA H100",
  class: "h100",
  memory_bytes: 80 * GiB,
  memory_used_bytes: 72 * GiB,
  memory_foreign_bytes: 0,
  fabric: "nvl0",
  replica: null,
  ...overrides,
});

const node: NodeView = {
  name: "gpu-1",
  state: "ready",
  address: "http://127.0.0.1:1",
  hostname: "gpu-1",
  fabric: "nvl0",
  labels: {},
  gpus: [gpu(0, { replica: "chat-1" }), gpu(1, { replica: "chat-2", memory_foreign_bytes: 20 * GiB }), gpu(2, { memory_used_bytes: null, memory_foreign_bytes: null })],
  memory_bytes: 256 * GiB,
  cpu_cores: 32,
  engines: ["vllm"],
  disk_free_bytes: 0,
  simulated: true,
  joined_at: "",
  last_seen_at: "",
  replicas: ["chat-1", "chat-2"],
  cordoned: false,
  draining: false,
};

const replica = (id: string, state: ReplicaView["state"], gpus: number[], model = "chat"): ReplicaView => ({
  id, model, profile: "h100", node: "gpu-1", engine: "vllm", gpus, state, endpoint: null, progress: null, reason: null, pid: null, adopted: false, since: "", created_at: "", arm: "stable", llama_cpp: null, members: null,
});

describe("each card's memory for the console", () => {
  const chat = resolveModel({ name: "chat", profiles: [{ name: "h100", engine: "vllm", source: "hf://org/chat", gpus: 1 }] }, "runtime");
  const parts = (replicas: ReplicaView[]) => ({
    catalog: { list: async () => [chat] },
    fleet: { listNodes: async () => [node], listReplicas: async () => replicas },
    cardBytes: (model: { name: string }, profile: string) => (model.name === "chat" && profile === "h100" ? { weights: 15 * GiB, kvCache: 2 * GiB, overhead: GiB, kvTokens: 32768, total: 18 * GiB } : undefined),
  });

  it("lists the planner's share of each replica holding a card, beside what the card reports used and what others hold", async () => {
    const answer = await cardMemoryView(parts([replica("chat-1", "ready", [0]), replica("chat-2", "starting", [1]), replica("chat-0", "stopped", [2])]));
    const cards = answer.nodes[0]?.cards ?? [];
    expect(cards.map((card) => card.planned.map((share) => [share.replica, share.weights_bytes / GiB, share.kv_bytes / GiB, share.overhead_bytes / GiB]))).toEqual([[["chat-1", 15, 2, 1]], [["chat-2", 15, 2, 1]], []]);
    expect(cards.map((card) => [card.used_bytes, card.foreign_bytes])).toEqual([
      [72 * GiB, 0],
      [72 * GiB, 20 * GiB],
      [null, null],
    ]);
  });

  it("lists no share for a replica whose model is gone from the catalog or not priced yet", async () => {
    const answer = await cardMemoryView({ ...parts([replica("old-1", "ready", [0], "removed-model")]), cardBytes: () => undefined });
    expect(answer.nodes[0]?.cards.every((card) => card.planned.length === 0)).toBe(true);
  });
});
