import { describe, expect, it } from "vitest";
import { headroom, headroomLimit } from "./headroom.js";
import { GiB, gpuProfile, held, node } from "./testing/fleet-builder.js";

describe("headroom", () => {
  it("counts the further replicas that fit now, per node, around the cards running replicas hold", () => {
    const snapshot = {
      nodes: [node("gpu-1", "4xh100-80@nvl0"), node("gpu-2", "2xh100-80@nvl0"), node("cordoned", "8xh100-80@nvl0", { unschedulable: "cordoned" })],
      replicas: [held("r1", "chat", "gpu-1", [0]), held("r2", "other", "gpu-2", [0, 1])],
    };
    const room = headroom(snapshot, { name: "chat", modelClass: "standard", profiles: [gpuProfile(1, { name: "one-card", bytesPerCard: 40 * GiB })] }, 0.9);
    expect(room).toMatchObject({ profile: "one-card", moreReplicas: 3, nodes: [{ node: "gpu-1", replicas: 3 }] });
    expect(room.reasons).toHaveLength(1);
    expect(room.reasons[0]).toMatch(/cordoned/);
    // Nothing was reserved: the same question gives the same answer.
    expect(headroom(snapshot, { name: "chat", modelClass: "standard", profiles: [gpuProfile(1, { name: "one-card" })] }, 0.9).moreReplicas).toBe(3);
  });

  it("answers none with placement's reason when no card is big enough, and stops at its limit", () => {
    const snapshot = { nodes: [node("gpu-1", "2xh100-80@nvl0")], replicas: [] };
    const none = headroom(snapshot, { name: "big", modelClass: "standard", profiles: [gpuProfile(1, { name: "one", bytesPerCard: 200 * GiB })] }, 0.9);
    expect(none).toMatchObject({ profile: "one", moreReplicas: 0, nodes: [] });
    expect(none.reasons[0]).toMatch(/GiB/);
    const cpu = { nodes: Array.from({ length: 100 }, (_, index) => node(`cpu-${index}`, "", { memoryGiB: 64 })), replicas: [] };
    const many = headroom(cpu, { name: "small", modelClass: "standard", profiles: [{ ...gpuProfile(0), cardClass: undefined, engine: "llamacpp", memoryBytes: GiB, cpuCores: 1 }] }, 0.9);
    expect(many.moreReplicas).toBe(headroomLimit);
    expect(many.reasons).toEqual([]);
  });
});
