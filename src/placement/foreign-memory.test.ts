import { describe, expect, it } from "vitest";
import { checkNode } from "./check-node.js";
import { placeReplicas } from "./place-replicas.js";
import { cardsOf, demand, GiB, gpuProfile, node } from "./testing/fleet-builder.js";
import type { Snapshot, SnapshotNode } from "./types.js";

/** A node whose listed cards each have `foreignGiB` held by processes llmgw did not start. */
function withForeign(base: SnapshotNode, foreignGiB: Record<number, number>): SnapshotNode {
  return { ...base, cards: base.cards.map((card) => (foreignGiB[card.index] !== undefined ? { ...card, foreignBytes: (foreignGiB[card.index] as number) * GiB } : card)) };
}

describe("placement and memory held by other processes", () => {
  it("does not count a card full of someone else's process as free: the replica goes to the empty node", () => {
    const snapshot: Snapshot = { nodes: [withForeign(node("a", "1xh100-80@nvl0"), { 0: 78 }), node("b", "1xh100-80@nvl1")], replicas: [] };
    const result = placeReplicas(snapshot, [demand("chat", 1, [gpuProfile(1, { bytesPerCard: 30 * GiB })])]);
    expect(result.placements).toEqual([{ model: "chat", profile: "gpu1", node: "b", cards: [0] }]);
  });

  it("refuses when the only card's room, less the other processes, is too small, and says how much is usable", () => {
    const snapshot: Snapshot = { nodes: [withForeign(node("a", "1xh100-80@nvl0"), { 0: 20 })], replicas: [] };
    // 80 GiB less 20 GiB foreign is 60 GiB, of which the planner's 90 % is 54 GiB.
    expect(placeReplicas(snapshot, [demand("chat", 1, [gpuProfile(1, { bytesPerCard: 50 * GiB })])]).placements).toHaveLength(1);
    const refused = placeReplicas(snapshot, [demand("chat", 1, [gpuProfile(1, { bytesPerCard: 60 * GiB })])]);
    expect(refused.placements).toEqual([]);
    expect(refused.refusals[0]?.reason).toBe("0 of 1 node: 1 has 54.0 GiB usable per card and needs 60.0 GiB");
  });

  it("takes the untouched cards of a node for a two-card replica, leaving the one another process uses", () => {
    const snapshot: Snapshot = { nodes: [withForeign(node("a", "3xh100-80@nvl0"), { 0: 70 })], replicas: [] };
    const result = placeReplicas(snapshot, [demand("chat", 1, [gpuProfile(2, { bytesPerCard: 40 * GiB })])]);
    expect(result.placements[0]?.cards).toEqual([1, 2]);
  });

  it("names the card and its usable room when a hand-picked card is taken by another process", () => {
    const snapshot: Snapshot = { nodes: [{ ...node("a", "1xh100-80@nvl0"), cards: cardsOf("1xh100-80@nvl0").map((card) => ({ ...card, foreignBytes: 76 * GiB })) }], replicas: [] };
    const check = checkNode(snapshot, gpuProfile(1, { bytesPerCard: 10 * GiB }), "a", { cards: [0] });
    expect(check).toEqual({ fits: false, reason: expect.stringMatching(/3\.6 GiB usable per card and needs 10\.0 GiB/) });
  });
});
