import { describe, expect, it } from "vitest";
import type { CardInventory } from "../protocol/agent-protocol.js";
import { withSimulatedUse } from "./simulated-card-use.js";

const GiB = 1024 ** 3;
const card = (index: number, foreignGiB?: number): CardInventory => ({
  index,
  uuid: `GPU-${index}`,
  name: "Simulated H100-80GB",
  class: "h100",
  memory_bytes: 80 * GiB,
  memory_used_bytes: (foreignGiB ?? 0) * GiB,
  ...(foreignGiB !== undefined ? { memory_foreign_bytes: foreignGiB * GiB } : {}),
  fabric: "nvl0",
});

describe("simulated cards' used memory", () => {
  it("reports an engine's share of the card once it starts, and nothing while it fetches or after it stops", () => {
    const gpus = [card(0), card(1), card(2)];
    const used = withSimulatedUse(gpus, [
      { cards: [0], state: "ready", gpuMemoryUtilization: 0.9 },
      { cards: [1], state: "fetching", gpuMemoryUtilization: 0.9 },
      { cards: [2], state: "stopped", gpuMemoryUtilization: 0.9 },
    ]).map((gpu) => gpu.memory_used_bytes);
    expect(used).toEqual([72 * GiB, 0, 0]);
  });

  it("adds the other processes' memory and never reports more than the card has", () => {
    const used = withSimulatedUse([card(0, 20), card(1, 20)], [{ cards: [1], state: "starting", gpuMemoryUtilization: 0.9 }]).map((gpu) => gpu.memory_used_bytes);
    expect(used).toEqual([20 * GiB, 80 * GiB]);
  });
});
