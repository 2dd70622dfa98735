import { describe, expect, it } from "vitest";
import { checkNode } from "./check-node.js";
import { cpuProfile, GiB, gpuProfile, held, node } from "./testing/fleet-builder.js";
import type { Snapshot } from "./types.js";

const snapshot: Snapshot = {
  nodes: [node("gpu-1", "4xh100-80@f0+4xh100-80@f1", { memoryGiB: 64, cpuCores: 16 }), node("gpu-2", "2xa100-40@pcie"), node("gpu-3", "8xh100-80@nvl", { unschedulable: "cordoned" })],
  replicas: [held("r-7", "qwen", "gpu-1", [4, 5])],
};

describe("checkNode", () => {
  it("answers the cards placement would choose on the named node", () => {
    expect(checkNode(snapshot, gpuProfile(2), "gpu-1")).toEqual({ fits: true, cards: [6, 7] });
  });

  it("accepts free, alike cards picked by hand", () => {
    expect(checkNode(snapshot, gpuProfile(2), "gpu-1", { cards: [1, 0] })).toEqual({ fits: true, cards: [1, 0] });
  });

  it("refuses a card another replica holds, naming the replica", () => {
    expect(checkNode(snapshot, gpuProfile(1), "gpu-1", { cards: [5] })).toEqual({ fits: false, reason: "card 5 of gpu-1 is held by replica r-7 (qwen)" });
  });

  it("refuses hand-picked cards on two fabrics", () => {
    expect(checkNode(snapshot, gpuProfile(2), "gpu-1", { cards: [3, 6] })).toEqual({
      fits: false,
      reason: "cards 3, 6 of gpu-1 are on fabrics f0 and f1: a replica's cards must be alike and share one fabric",
    });
  });

  it("refuses a card the node does not have, a wrong count and a card given twice", () => {
    expect(checkNode(snapshot, gpuProfile(1), "gpu-1", { cards: [9] })).toEqual({ fits: false, reason: "gpu-1 has no card 9 (its cards: 0, 1, 2, 3, 4, 5, 6, 7)" });
    expect(checkNode(snapshot, gpuProfile(2), "gpu-1", { cards: [0] })).toEqual({ fits: false, reason: "the profile gpu2 takes 2 cards and 1 was given" });
    expect(checkNode(snapshot, gpuProfile(2), "gpu-1", { cards: [0, 0] })).toEqual({ fits: false, reason: "card 0 is given twice" });
  });

  it("refuses a hand-picked card of another class or too small", () => {
    expect(checkNode(snapshot, gpuProfile(1), "gpu-2", { cards: [0] })).toEqual({ fits: false, reason: "gpu-2 has no h100 cards" });
    expect(checkNode(snapshot, gpuProfile(1, { cardClass: undefined, bytesPerCard: 61 * GiB }), "gpu-2", { cards: [0] })).toEqual({
      fits: false,
      reason: "gpu-2 has 36.0 GiB usable per card and needs 61.0 GiB",
    });
  });

  it("applies the same filters as placement: cordoned, no free cards, host memory", () => {
    expect(checkNode(snapshot, gpuProfile(1), "gpu-3")).toEqual({ fits: false, reason: "gpu-3 is cordoned" });
    expect(checkNode(snapshot, gpuProfile(5), "gpu-1")).toEqual({ fits: false, reason: "gpu-1 has 8 h100 but at most 4 on one fabric, and needs 5" });
    const busier = { ...snapshot, replicas: [...snapshot.replicas, held("r-8", "qwen", "gpu-1", [0])] };
    expect(checkNode(busier, gpuProfile(4), "gpu-1")).toEqual({ fits: false, reason: "gpu-1 has 5 free h100 but at most 3 on one fabric, and needs 4" });
    expect(checkNode(snapshot, cpuProfile(100, 4), "gpu-1")).toEqual({ fits: false, reason: "gpu-1 has 64.0 GiB free host memory and needs 100.0 GiB" });
    expect(checkNode(snapshot, gpuProfile(1, { memoryBytes: 100 * GiB }), "gpu-1", { cards: [0] })).toEqual({
      fits: false,
      reason: "gpu-1 has 64.0 GiB free host memory and needs 100.0 GiB",
    });
  });

  it("names the nodes there are when the node is unknown", () => {
    expect(checkNode(snapshot, gpuProfile(1), "gpu-9")).toEqual({ fits: false, reason: "no node is named gpu-9 (nodes: gpu-1, gpu-2, gpu-3)" });
  });
});
