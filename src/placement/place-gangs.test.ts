import { describe, expect, it } from "vitest";
import { choosePreemptions } from "./choose-preemptions.js";
import { placeReplicas } from "./place-replicas.js";
import { demand, GiB, gpuProfile, held, node } from "./testing/fleet-builder.js";
import type { HeldReplica, Snapshot } from "./types.js";

const gang = (nodes: number, gpus = 8, options = {}) => gpuProfile(gpus, { name: "gang", nodes, ...options });
const fleet = (replicas: HeldReplica[] = []): Snapshot => ({
  nodes: [node("ib-a", "8xh100-80@ib0"), node("ib-b", "8xh100-80@ib0"), node("ib-c", "8xh100-80@ib0"), node("pcie-a", "8xh100-80@pcie"), node("l40", "4xl40s-48@pcie")],
  replicas,
});

describe("placing a replica over several nodes (a gang)", () => {
  it("places one replica on two whole nodes of one fabric, the leader first, each member with its cards", () => {
    const result = placeReplicas(fleet(), [demand("dsv3", 1, [gang(2)])]);
    expect(result.refusals).toEqual([]);
    expect(result.placements).toEqual([
      {
        model: "dsv3",
        profile: "gang",
        node: "ib-a",
        cards: [0, 1, 2, 3, 4, 5, 6, 7],
        members: [
          { node: "ib-a", cards: [0, 1, 2, 3, 4, 5, 6, 7], rank: 0 },
          { node: "ib-b", cards: [0, 1, 2, 3, 4, 5, 6, 7], rank: 1 },
        ],
      },
    ]);
  });

  it("reserves a gang's cards before the next demand: a second gang finds no two free nodes left on ib0", () => {
    const result = placeReplicas(fleet(), [demand("a", 1, [gang(2)]), demand("b", 1, [gang(2)])]);
    expect(result.placements.map((placement) => placement.members?.map((member) => member.node))).toEqual([["ib-a", "ib-b"]]);
    expect(result.refusals).toEqual([{ model: "b", unplaced: 1, reason: "0/2 fabrics: ib0 has 1 node with 8 free h100 of the 2 needed; pcie has 1 node with 8 free h100 of the 2 needed" }]);
  });

  it("never spans fabrics, even when two free nodes of the class exist across two", () => {
    const snapshot: Snapshot = { nodes: [node("a", "8xh100-80@ib0"), node("b", "8xh100-80@ib1")], replicas: [] };
    const result = placeReplicas(snapshot, [demand("dsv3", 1, [gang(2)])]);
    expect(result.placements).toEqual([]);
    expect(result.refusals[0]?.reason).toBe("0/2 fabrics: ib0 has 1 node with 8 free h100 of the 2 needed; ib1 has 1 node with 8 free h100 of the 2 needed");
  });

  it("sums a refusal up per fabric, naming a fabric without the class", () => {
    const snapshot: Snapshot = { nodes: [node("a", "8xh100-80@ib0"), node("b", "8xh100-80@ib0", { unschedulable: "cordoned" }), node("c", "4xl40s-48@pcie")], replicas: [] };
    expect(placeReplicas(snapshot, [demand("dsv3", 1, [gang(2)])]).refusals[0]?.reason).toBe("0/2 fabrics: ib0 has 1 node with 8 free h100 of the 2 needed; pcie has no h100");
  });

  it("prefers whole free nodes over breaking into a node that holds other replicas", () => {
    const snapshot: Snapshot = {
      nodes: [node("a", "16xh100-80@ib0"), node("b", "8xh100-80@ib0"), node("c", "8xh100-80@ib0")],
      replicas: [held("small", "other", "a", [8])],
    };
    const placed = placeReplicas(snapshot, [demand("dsv3", 1, [gang(2)])]).placements[0];
    expect(placed?.members?.map((member) => member.node)).toEqual(["b", "c"]);
  });

  it("checks each member's host memory too, all or nothing", () => {
    const snapshot: Snapshot = { nodes: [node("a", "8xh100-80@ib0", { memoryGiB: 64 }), node("b", "8xh100-80@ib0", { memoryGiB: 512 })], replicas: [] };
    const result = placeReplicas(snapshot, [demand("dsv3", 1, [gang(2, 8, { memoryBytes: 128 * GiB })]), demand("small", 1, [gpuProfile(8)])]);
    // The gang does not fit, so nothing of it is reserved: the one-node model still gets a whole node.
    expect(result.placements.map((placement) => placement.model)).toEqual(["small"]);
    expect(result.refusals[0]?.reason).toBe("0/1 fabric: ib0 has 1 node with 8 free h100 of the 2 needed");
  });

  it("falls back to the model's next profile when no gang fits", () => {
    const snapshot: Snapshot = { nodes: [node("a", "8xh100-80@ib0")], replicas: [] };
    const placed = placeReplicas(snapshot, [demand("m", 1, [gang(2), gpuProfile(8, { name: "one" })])]).placements[0];
    expect(placed).toMatchObject({ profile: "one", node: "a" });
    expect(placed?.members).toBeUndefined();
  });
});

describe("preemption for a gang", () => {
  const opportunistic = (id: string, nodeName: string, cards: number[]) => held(id, `opp-${id}`, nodeName, cards, "opportunistic");

  it("stops lower-class replicas only on the member nodes, and only when the whole gang then fits", () => {
    const snapshot: Snapshot = {
      nodes: [node("a", "8xh100-80@ib0"), node("b", "8xh100-80@ib0"), node("c", "8xh100-80@ib1")],
      replicas: [opportunistic("x", "a", [0, 1]), opportunistic("y", "b", [0]), opportunistic("z", "c", [0, 1, 2, 3])],
    };
    const choice = choosePreemptions(snapshot, demand("dsv3", 1, [gang(2)], "critical"), new Map());
    expect(choice.possible).toBe(true);
    if (!choice.possible) return;
    expect(choice.victims.map((victim) => victim.id).sort()).toEqual(["x", "y"]);
    expect(choice.placement.members?.map((member) => member.node)).toEqual(["a", "b"]);
  });

  it("takes nothing when no fabric can make room on enough nodes", () => {
    const snapshot: Snapshot = { nodes: [node("a", "8xh100-80@ib0"), node("c", "8xh100-80@ib1")], replicas: [opportunistic("x", "a", [0])] };
    const choice = choosePreemptions(snapshot, demand("dsv3", 1, [gang(2)], "critical"), new Map());
    expect(choice).toEqual({
      possible: false,
      reason:
        "no room even by preemption: 0/2 fabrics: ib0 has 0 nodes with 8 free h100 of the 2 needed; ib1 has 1 node with 8 free h100 of the 2 needed, and stopping what a replica of this class may stop does not make room on enough nodes of one fabric",
    });
  });

  it("never takes another gang's member one by one, for a gang or a one-node replica", () => {
    const member = (nodeName: string): HeldReplica => ({ ...held("g1", "other-gang", nodeName, [0, 1, 2, 3, 4, 5, 6, 7], "opportunistic"), gangNodes: 2 });
    const snapshot: Snapshot = { nodes: [node("a", "8xh100-80@ib0"), node("b", "8xh100-80@ib0"), node("c", "8xh100-80@ib0")], replicas: [member("a"), member("b")] };
    expect(choosePreemptions(snapshot, demand("dsv3", 1, [gang(2)], "critical"), new Map()).possible).toBe(false);
    expect(choosePreemptions(snapshot, demand("one", 1, [gpuProfile(8)], "critical"), new Map())).toMatchObject({ possible: true, victims: [], placement: { node: "c" } });
    const full: Snapshot = { ...snapshot, replicas: [...snapshot.replicas, held("solo", "s", "c", [0], "opportunistic")] };
    const choice = choosePreemptions(full, demand("one", 1, [gpuProfile(8)], "critical"), new Map());
    expect(choice.possible && choice.victims.map((victim) => victim.id)).toEqual(["solo"]);
  });
});
