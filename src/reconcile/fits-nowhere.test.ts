import { describe, expect, it } from "vitest";
import { resolveModel } from "../catalog/catalog-model.js";
import type { ModelEntry } from "../catalog/schema.js";
import { fleetFromNodes, type InventoryNode } from "../fleet/pools.js";
import { fixtureFacts } from "../plan/testing/fixtures.js";
import { fitsNowhere } from "./fits-nowhere.js";

const GiB = 1024 ** 3;
const h100Node = (name: string, cards: number, free = cards): InventoryNode => ({
  name,
  state: "ready",
  gpus: Array.from({ length: cards }, (_, index) => ({ index, class: "h100", memoryBytes: 80 * GiB, fabric: "nvl0", free: index < free })),
  memoryBytes: 256 * GiB,
  cpuCores: 32,
});
const llama70 = "/models/llama-70b";
const facts = new Map([[llama70, fixtureFacts("Llama-3.3-70B-Instruct")]]);
const model = (entry: Omit<ModelEntry, "name">) => resolveModel({ name: "big", ...entry }, "runtime");

describe("fitsNowhere: a model no node of this fleet could hold even empty", () => {
  it("refuses a 70B bf16 model on one H100, with the planner's figures and how much is short", () => {
    const reason = fitsNowhere(model({ context: 8192, profiles: [{ engine: "vllm", source: llama70, gpu_class: "h100", gpus: 1 }] }), facts, fleetFromNodes([h100Node("gpu-1", 2)]), 0.9);
    expect(reason).toMatch(/^profile vllm \(vllm, 1 card\): its card would need \d+\.\d GiB \(\d+\.\d GiB weights, .*\); the largest h100 card has 72\.0 GiB usable \(0\.90 of 80\.0 GiB\): \d+\.\d GiB short$/);
  });

  it("says nothing of a model that would fit once cards are free: that is no room now, not nowhere", () => {
    expect(fitsNowhere(model({ context: 8192, profiles: [{ engine: "vllm", source: llama70, gpu_class: "h100", gpus: 2 }] }), facts, fleetFromNodes([h100Node("gpu-1", 2, 0)]), 0.9)).toBeUndefined();
  });

  it("refuses more cards than any node has on one fabric", () => {
    const reason = fitsNowhere(model({ profiles: [{ engine: "vllm", source: llama70, gpu_class: "h100", gpus: 8 }] }), facts, fleetFromNodes([h100Node("gpu-1", 2), h100Node("gpu-2", 4)]), 0.9);
    expect(reason).toBe("profile vllm: no node has 8 h100 cards on one fabric; the most, on gpu-2, is 4");
  });

  it("refuses a profile over more nodes of one fabric than the fleet has, counting each fabric apart", () => {
    const gang = { engine: "vllm", source: llama70, gpu_class: "h100", gpus: 2, nodes: 3 } as const;
    const onIb = (node: InventoryNode): InventoryNode => ({ ...node, gpus: node.gpus.map((gpu) => ({ ...gpu, fabric: "ib0" })) });
    // Three nodes of two cards, but two on one fabric and one on another: no gang of three can be made.
    const split = fleetFromNodes([h100Node("gpu-1", 2), h100Node("gpu-2", 2), onIb(h100Node("gpu-3", 2))]);
    expect(fitsNowhere(model({ profiles: [gang] }), facts, split, 0.9)).toBe("profile vllm: spans 3 nodes of 2 h100 cards on one fabric; the most this fleet has is 2 (h100 on nvl0)");
    // Three on one fabric, busy or not: that is no room now.
    expect(fitsNowhere(model({ profiles: [gang] }), facts, fleetFromNodes([h100Node("gpu-1", 2), h100Node("gpu-2", 2, 0), h100Node("gpu-3", 2, 0)]), 0.9)).toBeUndefined();
  });

  it("cannot tell with no node of the class joined, an unread source, or a CPU profile beside the one that fits nowhere", () => {
    const tooBig = { engine: "vllm", source: llama70, gpu_class: "h100", gpus: 1 } as const;
    expect(fitsNowhere(model({ profiles: [tooBig] }), facts, fleetFromNodes([]), 0.9)).toBeUndefined();
    expect(fitsNowhere(model({ profiles: [{ ...tooBig, gpu_class: "a100" }] }), facts, fleetFromNodes([h100Node("gpu-1", 2)]), 0.9)).toBeUndefined();
    expect(fitsNowhere(model({ profiles: [tooBig] }), new Map(), fleetFromNodes([h100Node("gpu-1", 2)]), 0.9)).toBeUndefined();
    expect(fitsNowhere(model({ profiles: [tooBig, { engine: "llamacpp", source: "/models/llama-70b.gguf" }] }), facts, fleetFromNodes([h100Node("gpu-1", 2)]), 0.9)).toBeUndefined();
  });
});
