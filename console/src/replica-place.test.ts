import { describe, expect, it } from "vitest";
import { replicaCards, replicaNodes, runsOn } from "./replica-place.ts";

const member = (rank: number, node: string) => ({ rank, node, gpus: [0, 1], state: "ready" as const, pid: 10 + rank, reason: null });
const gang = { node: "gpu-node-3", gpus: [0, 1], members: [member(0, "gpu-node-3"), member(1, "gpu-node-4")] };
const single = { node: "gpu-node-1", gpus: [2], members: null };

describe("where a replica runs, as the console's fleet and model pages show it", () => {
  it("names every member's node and cards by rank for a replica over several nodes, and one node otherwise", () => {
    expect(replicaNodes(gang)).toBe("gpu-node-3 (rank 0) + gpu-node-4 (rank 1)");
    expect(replicaCards(gang)).toBe("0, 1 + 0, 1");
    expect(replicaCards(gang, "gpu-node-4")).toBe("0, 1 (rank 1 of 2)");
    expect(replicaNodes(single)).toBe("gpu-node-1");
    expect(replicaCards(single)).toBe("2");
    expect(replicaCards({ gpus: [], members: null })).toBe("CPU");
  });

  it("lists a gang on each member's node page, not only its leader's", () => {
    expect(runsOn(gang, "gpu-node-4")).toBe(true);
    expect(runsOn(gang, "gpu-node-1")).toBe(false);
    expect(runsOn(single, "gpu-node-1")).toBe(true);
  });
});
