import { describe, expect, it } from "vitest";
import { placeReplicas } from "./place-replicas.js";
import { cpuProfile, demand, GiB, gpuProfile, held, node } from "./testing/fleet-builder.js";
import type { Snapshot } from "./types.js";

const nodesOf = (result: ReturnType<typeof placeReplicas>) => result.placements.map((placement) => placement.node);

describe("placeReplicas", () => {
  it("packs a second one-card replica onto the partly used node", () => {
    const snapshot: Snapshot = { nodes: [node("a", "8xh100-80@nvl0"), node("b", "8xh100-80@nvl1")], replicas: [held("r1", "other", "b", [0])] };
    const result = placeReplicas(snapshot, [demand("chat", 1, [gpuProfile(1)])]);
    expect(result.placements).toEqual([{ model: "chat", profile: "gpu1", node: "b", cards: [1] }]);
  });

  it("spreads two replicas of one model over two nodes", () => {
    const snapshot: Snapshot = { nodes: [node("a", "8xh100-80@nvl0"), node("b", "8xh100-80@nvl1")], replicas: [] };
    const result = placeReplicas(snapshot, [demand("chat", 2, [gpuProfile(1)])]);
    expect(nodesOf(result).sort()).toEqual(["a", "b"]);
  });

  it("spreads before it packs: a model's second replica opens an empty node", () => {
    const snapshot: Snapshot = { nodes: [node("a", "8xh100-80@nvl0"), node("b", "8xh100-80@nvl1")], replicas: [held("r1", "chat", "a", [0])] };
    expect(nodesOf(placeReplicas(snapshot, [demand("chat", 1, [gpuProfile(1)])]))).toEqual(["b"]);
  });

  it("puts a third replica beside one of the first two when only two nodes fit", () => {
    const snapshot: Snapshot = { nodes: [node("a", "8xh100-80@nvl0"), node("b", "8xh100-80@nvl1")], replicas: [] };
    const result = placeReplicas(snapshot, [demand("chat", 3, [gpuProfile(1)])]);
    expect(result.refusals).toEqual([]);
    expect(new Set(nodesOf(result))).toEqual(new Set(["a", "b"]));
  });

  it("keeps a whole node free for an eight-card model placed after the small ones", () => {
    const snapshot: Snapshot = { nodes: [node("a", "8xh100-80@nvl0"), node("b", "8xh100-80@nvl1")], replicas: [held("r1", "other", "a", [0, 1, 2, 3])] };
    const small = ["s1", "s2", "s3", "s4"].map((name) => demand(name, 1, [gpuProfile(1)]));
    const result = placeReplicas(snapshot, [...small, demand("large", 1, [gpuProfile(8)], "opportunistic")]);
    expect(result.refusals).toEqual([]);
    const large = result.placements.find((placement) => placement.model === "large");
    expect(large).toEqual({ model: "large", profile: "gpu8", node: "b", cards: [0, 1, 2, 3, 4, 5, 6, 7] });
  });

  it("takes a replica's cards from the fabric it fills, leaving the other fabric whole", () => {
    const snapshot: Snapshot = { nodes: [node("a", "4xh100-80@f0+4xh100-80@f1")], replicas: [held("r1", "other", "a", [4, 5])] };
    const result = placeReplicas(snapshot, [demand("chat", 1, [gpuProfile(2)])]);
    expect(result.placements[0]?.cards).toEqual([6, 7]);
  });

  it("never gives a replica cards another replica holds", () => {
    const snapshot: Snapshot = { nodes: [node("a", "4xh100-80@nvl0")], replicas: [held("r1", "other", "a", [0, 2])] };
    const result = placeReplicas(snapshot, [demand("chat", 2, [gpuProfile(1)])]);
    expect(result.placements.map((placement) => placement.cards)).toEqual([[1], [3]]);
  });

  it("refuses a 2-card profile on nodes whose free cards are on two fabrics", () => {
    const snapshot: Snapshot = {
      nodes: [node("a", "2xh100-80@f0+2xh100-80@f1"), node("b", "1xh100-80@f0+1xh100-80@f1")],
      replicas: [held("r1", "other", "a", [0]), held("r2", "other", "a", [2])],
    };
    const result = placeReplicas(snapshot, [demand("chat", 1, [gpuProfile(2)])]);
    expect(result.placements).toEqual([]);
    expect(result.refusals).toEqual([
      {
        model: "chat",
        unplaced: 1,
        reason: "0 of 2 nodes: 1 has 2 free h100 but at most 1 on one fabric, and needs 2, 1 has 2 h100 but at most 1 on one fabric, and needs 2",
      },
    ]);
  });

  it("says how many nodes fail for which reason, as the planner does", () => {
    const full = (name: string) => node(name, "2xa100-80@pcie");
    const snapshot: Snapshot = {
      nodes: [full("a"), full("b"), full("c"), node("d", "4xa100-40@pcie"), node("e", "4xa100-40@pcie")],
      replicas: ["a", "b", "c"].map((name) => held(`r-${name}`, "other", name, [0, 1])),
    };
    const profile = gpuProfile(1, { cardClass: "a100", bytesPerCard: 61 * GiB });
    const result = placeReplicas(snapshot, [demand("qwen-72b", 1, [profile])]);
    expect(result.refusals[0]?.reason).toBe("0 of 5 nodes: 3 have no free a100, 2 have 36.0 GiB usable per card and need 61.0 GiB");
  });

  it("names nodes that are cordoned, lost or lack the engine", () => {
    const snapshot: Snapshot = {
      nodes: [
        node("a", "8xh100-80@nvl0", { unschedulable: "cordoned" }),
        node("b", "8xh100-80@nvl1", { unschedulable: "lost" }),
        node("c", "8xh100-80@nvl2", { engines: ["llamacpp"] }),
        node("d", "8xa100-80@nvl3"),
      ],
      replicas: [],
    };
    const result = placeReplicas(snapshot, [demand("chat", 1, [gpuProfile(1)])]);
    expect(result.refusals[0]?.reason).toBe("0 of 4 nodes: 1 is cordoned, 1 is lost, 1 has no h100 cards, 1 has no vllm installed");
  });

  it("checks the cards' memory with the planner's usable share, as configured", () => {
    const snapshot: Snapshot = { nodes: [node("a", "1xh100-80@nvl0")], replicas: [] };
    const profile = gpuProfile(1, { bytesPerCard: 75 * GiB });
    expect(placeReplicas(snapshot, [demand("chat", 1, [profile])]).refusals[0]?.reason).toBe("0 of 1 node: 1 has 72.0 GiB usable per card and needs 75.0 GiB");
    expect(placeReplicas(snapshot, [demand("chat", 1, [profile])], { gpuMemoryUtilization: 0.95 }).placements).toHaveLength(1);
  });

  it("tries the next profile when the first cannot be placed", () => {
    const snapshot: Snapshot = { nodes: [node("a", "1xh100-80@nvl0", { memoryGiB: 64, cpuCores: 16 })], replicas: [] };
    const result = placeReplicas(snapshot, [demand("chat", 2, [gpuProfile(1), cpuProfile(16, 8)])]);
    expect(result.placements.map((placement) => placement.profile)).toEqual(["gpu1", "cpu"]);
  });

  it("gives the reason per profile when none can be placed", () => {
    const snapshot: Snapshot = { nodes: [node("a", "1xh100-80@nvl0", { memoryGiB: 8, cpuCores: 16 })], replicas: [held("r1", "other", "a", [0])] };
    const result = placeReplicas(snapshot, [demand("chat", 1, [gpuProfile(1, { name: "h100" }), cpuProfile(16, 8)])]);
    expect(result.refusals[0]?.reason).toBe("profile h100: 0 of 1 node: 1 has no free h100; profile cpu: 0 of 1 node: 1 has 8.0 GiB free host memory and needs 16.0 GiB");
  });

  it("packs CPU replicas onto the host with the least memory left that still fits", () => {
    const snapshot: Snapshot = {
      nodes: [node("big", "", { memoryGiB: 512 }), node("small", "", { memoryGiB: 40 }), node("tiny", "", { memoryGiB: 8 })],
      replicas: [],
    };
    const result = placeReplicas(snapshot, [demand("a", 1, [cpuProfile(16, 4)]), demand("b", 1, [cpuProfile(16, 4)]), demand("c", 1, [cpuProfile(16, 4)])]);
    expect(nodesOf(result)).toEqual(["small", "small", "big"]);
  });

  it("counts host memory and cores held by running replicas", () => {
    const snapshot: Snapshot = {
      nodes: [node("a", "", { memoryGiB: 64, cpuCores: 16 })],
      replicas: [held("r1", "other", "a", [], "standard", { memoryGiB: 16, cpuCores: 12 })],
    };
    const result = placeReplicas(snapshot, [demand("chat", 1, [cpuProfile(16, 8)])]);
    expect(result.refusals[0]?.reason).toBe("0 of 1 node: 1 has 4 free CPU cores and needs 8");
  });

  it("places critical models first, whatever order the demands come in", () => {
    const snapshot: Snapshot = { nodes: [node("a", "1xh100-80@nvl0")], replicas: [] };
    const result = placeReplicas(snapshot, [demand("aaa", 1, [gpuProfile(1)], "opportunistic"), demand("bbb", 1, [gpuProfile(1)]), demand("zzz", 1, [gpuProfile(1)], "critical")]);
    expect(result.placements.map((placement) => placement.model)).toEqual(["zzz"]);
    expect(result.refusals.map((refusal) => refusal.model)).toEqual(["bbb", "aaa"]);
  });

  it("reports how many of a demand's replicas were left unplaced", () => {
    const snapshot: Snapshot = { nodes: [node("a", "2xh100-80@nvl0")], replicas: [] };
    const result = placeReplicas(snapshot, [demand("chat", 5, [gpuProfile(1)])]);
    expect(result.placements).toHaveLength(2);
    expect(result.refusals).toEqual([{ model: "chat", unplaced: 3, reason: "0 of 1 node: 1 has no free h100" }]);
  });

  it("uses any class when the profile names none, but never mixes classes in one replica", () => {
    const snapshot: Snapshot = { nodes: [node("a", "1xh100-80@nvl0+1xa100-80@nvl0")], replicas: [] };
    expect(placeReplicas(snapshot, [demand("chat", 1, [gpuProfile(1, { cardClass: undefined })])]).placements).toHaveLength(1);
    expect(placeReplicas(snapshot, [demand("chat", 1, [gpuProfile(2, { cardClass: undefined })])]).refusals[0]?.reason).toBe(
      "0 of 1 node: 1 has 2 cards but at most 1 alike (one class, size and fabric), and needs 2",
    );
  });

  it("says so when no node has joined, or the model has no profile", () => {
    expect(placeReplicas({ nodes: [], replicas: [] }, [demand("chat", 1, [gpuProfile(1)])]).refusals[0]?.reason).toBe("0 of 0 nodes: no node has joined the fleet");
    expect(placeReplicas({ nodes: [node("a", "1xh100-80@nvl0")], replicas: [] }, [demand("chat", 1, [])]).refusals[0]?.reason).toMatch(/has no profile/);
  });

  it("ignores stored replicas on nodes it does not know instead of failing", () => {
    const snapshot: Snapshot = { nodes: [node("a", "1xh100-80@nvl0")], replicas: [held("r1", "other", "gone", [0])] };
    expect(placeReplicas(snapshot, [demand("chat", 1, [gpuProfile(1)])]).placements).toEqual([{ model: "chat", profile: "gpu1", node: "a", cards: [0] }]);
  });

  it("gives the same answer whatever order the nodes are listed in", () => {
    const nodes = [node("a", "8xh100-80@nvl0"), node("b", "4xh100-80@nvl1"), node("c", "2xh100-80@nvl2")];
    const demands = [demand("x", 3, [gpuProfile(2)]), demand("y", 2, [gpuProfile(1)])];
    expect(placeReplicas({ nodes: [...nodes].reverse(), replicas: [] }, demands)).toEqual(placeReplicas({ nodes, replicas: [] }, demands));
  });
});
