import { describe, expect, it } from "vitest";
import { GiB, model, node, observed, replica, settings } from "../../test/support/reconcile-fixtures.js";
import { diff } from "./diff.js";
import type { Action, ObservedNode } from "./types.js";

const starts = (actions: Action[]) => actions.filter((action): action is Extract<Action, { kind: "start" }> => action.kind === "start");
const eightCards = (name: string, fabric = "ib0"): ObservedNode => node(name, { cards: Array.from({ length: 8 }, (_, index) => ({ index, cardClass: "h100", memoryBytes: 80 * GiB, fabric })) });
const big = model("big", { profiles: [{ name: "two-nodes", engine: "vllm", cardClass: "h100", gpus: 8, nodes: 2, memoryBytes: 0, cpuCores: 0, bytesPerCard: undefined }] });

describe("diff with replicas over several nodes", () => {
  it("starts a gang: one start naming every member, leader first, on two nodes of one fabric", () => {
    const actions = diff({ models: [big] }, observed([eightCards("a"), eightCards("b"), eightCards("c", "pcie")]), settings);
    const [start] = starts(actions);
    expect(starts(actions)).toHaveLength(1);
    expect(start?.members?.map((member) => member.cards.length)).toEqual([8, 8]);
    expect(start?.members?.[0]?.node).toBe(start?.node);
    // Two nodes of ib0, never the pcie one.
    expect(new Set(start?.members?.map((member) => member.node))).toEqual(new Set(["a", "b"]));
  });

  it("records a failed gang once, under its replica's id, and places nothing on its members' cards meanwhile", () => {
    const gang = replica("big-1", "big", "a", [0, 1, 2, 3, 4, 5, 6, 7], {
      profile: "two-nodes",
      state: "failed",
      reason: "member rank 1 on b failed: killed by SIGKILL",
      members: [
        { id: "big-1", rank: 0, node: "a", cards: [0, 1, 2, 3, 4, 5, 6, 7] },
        { id: "big-1.rank1", rank: 1, node: "b", cards: [0, 1, 2, 3, 4, 5, 6, 7] },
      ],
    });
    const actions = diff({ models: [big] }, observed([eightCards("a"), eightCards("b")], [gang]), settings);
    expect(actions.filter((action) => action.kind === "record-failure")).toEqual([
      { kind: "record-failure", id: "big-1", model: "big", node: "a", reason: "member rank 1 on b failed: killed by SIGKILL", anotherServes: false },
    ]);
  });

  it("holds a running gang's cards on every member's node: another model finds no room there", () => {
    const gang = replica("big-1", "big", "a", [0, 1, 2, 3, 4, 5, 6, 7], {
      profile: "two-nodes",
      members: [
        { id: "big-1", rank: 0, node: "a", cards: [0, 1, 2, 3, 4, 5, 6, 7] },
        { id: "big-1.rank1", rank: 1, node: "b", cards: [0, 1, 2, 3, 4, 5, 6, 7] },
      ],
    });
    const small = model("small", { profiles: [{ name: "h100", engine: "vllm", cardClass: "h100", gpus: 1, memoryBytes: 0, cpuCores: 0, bytesPerCard: undefined }] });
    const actions = diff({ models: [{ ...big, placement: { state: "placed", reason: null } }, small] }, observed([eightCards("a"), eightCards("b")], [gang]), settings);
    expect(starts(actions)).toEqual([]);
    expect(actions.find((action) => action.kind === "placement" && action.model === "small")).toMatchObject({ state: "unplaceable" });
  });

  it("waits, not refuses, while a stopped gang's last members still hold the cards its replacement needs", () => {
    const strays = [{ id: "big-1.rank1", model: "big", node: "b", cards: [0, 1, 2, 3, 4, 5, 6, 7] }];
    const actions = diff({ models: [{ ...big, placement: { state: "placed", reason: null } }] }, { ...observed([eightCards("a"), eightCards("b")]), strays }, settings);
    expect(actions.find((action) => action.kind === "placement")).toMatchObject({ state: "waiting", reason: expect.stringContaining("waiting for its stopping replicas") });
  });

  it("stops a member whose leader is gone, without a drain", () => {
    const actions = diff({ models: [] }, { ...observed([eightCards("a"), eightCards("b")]), strays: [{ id: "big-1.rank1", model: "big", node: "b", cards: [0] }] }, settings);
    expect(actions).toContainEqual({ kind: "stop-member", id: "big-1.rank1", model: "big", node: "b" });
  });
});
