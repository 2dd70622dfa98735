import { describe, expect, it } from "vitest";
import type { CardInventory, Inventory } from "../protocol/agent-protocol.js";
import { InventoryTracker } from "./inventory-tracker.js";

const card: CardInventory = { index: 0, uuid: "GPU-0", name: "NVIDIA H100 80GB HBM3", class: "h100", memory_bytes: 80e9, fabric: "nvl0" };
const inventory = (cores: number): Inventory => ({ hostname: "node", cpu_cores: cores, memory_bytes: 64e9, gpus: [card], engines: ["vllm"], disk_free_bytes: 1e12, simulated: true });

/** A clock the test moves, and a gatherer that answers what the test says the node has now. */
function tracker(start = 0) {
  let now = start;
  let next: Inventory | Error = inventory(8);
  const reads: (Inventory["gpus"] | undefined)[] = [];
  const gather = async (lastKnown?: Inventory["gpus"]) => {
    reads.push(lastKnown);
    if (next instanceof Error) throw next;
    return next;
  };
  return {
    create: () => InventoryTracker.start(gather, () => now),
    advance: (ms: number) => (now += ms),
    setNext: (value: Inventory | Error) => (next = value),
    reads,
  };
}

describe("the inventory the heartbeats carry", () => {
  it("is sent with the first heartbeat, then only when it changed", async () => {
    const clock = tracker();
    const tracked = await clock.create();
    const first = await tracked.report();
    expect(first.send).toBe(true);
    tracked.delivered(first);
    expect((await tracked.report()).send).toBe(false);
    clock.setNext(inventory(16));
    clock.advance(InventoryTracker.refreshMs + 1);
    const changed = await tracked.report();
    expect(changed).toMatchObject({ send: true, inventory: { cpu_cores: 16 } });
  });

  it("is sent again until a heartbeat that carried it is accepted", async () => {
    const tracked = await tracker().create();
    await tracked.report();
    expect((await tracked.report()).send).toBe(true);
  });

  it("needs no heartbeat to repeat what a join carried", async () => {
    const tracked = await tracker().create();
    tracked.joinedWith(tracked.current);
    expect((await tracked.report()).send).toBe(false);
  });

  it("is read again every 30 s, and at once after markStale (something was installed)", async () => {
    const clock = tracker(1_000_000);
    const tracked = await clock.create();
    await tracked.report();
    clock.advance(InventoryTracker.refreshMs - 1);
    await tracked.report();
    expect(clock.reads).toHaveLength(1);
    tracked.markStale();
    await tracked.report();
    expect(clock.reads).toHaveLength(2);
    // The cards it knew are handed to the next read, so a failing nvidia-smi does not lose them.
    expect(clock.reads[1]).toEqual([card]);
  });

  it("keeps the cards it knew when a read fails: replicas still run on them", async () => {
    const clock = tracker();
    const tracked = await clock.create();
    clock.setNext(new Error("nvidia-smi: not found"));
    clock.advance(InventoryTracker.refreshMs + 1);
    expect((await tracked.report()).inventory.gpus).toEqual([card]);
  });

  it("has simulated cards say what the replicas on them hold", async () => {
    const tracked = await tracker().create();
    const report = await tracked.report([{ cards: [0], state: "ready", gpuMemoryUtilization: 0.5 }]);
    expect(report.inventory.gpus[0]?.memory_used_bytes).toBe(40e9);
  });
});
