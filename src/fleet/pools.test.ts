import { describe, expect, it } from "vitest";
import { parseHardwareSpec } from "./hardware-spec.js";
import { fleetFromHardwareSpec, fleetFromNodes, largestFreeOnOneNode, poolCardsFree, type InventoryNode } from "./pools.js";

const GiB = 1024 ** 3;

describe("fleetFromHardwareSpec", () => {
  it("makes one pool per class and fabric, keeping each node's cards apart", () => {
    const fleet = fleetFromHardwareSpec(parseHardwareSpec("4xH100-80GB@nvl0,4xH100-80GB@nvl0,2xL40S-48GB@pcie"));
    expect(fleet.pools).toHaveLength(2);
    const h100 = fleet.pools.find((pool) => pool.cardClass === "h100");
    expect(h100?.nodes.map((node) => node.cardsFree)).toEqual([4, 4]);
    expect(h100 && largestFreeOnOneNode(h100)).toBe(4);
    expect(h100 && poolCardsFree(h100)).toBe(8);
  });

  it("gives a group without a fabric its own fabric, so two such groups never pool", () => {
    const fleet = fleetFromHardwareSpec(parseHardwareSpec("4xH100-80GB,4xH100-80GB"));
    expect(fleet.pools).toHaveLength(2);
    expect(fleet.pools.map((pool) => pool.fabric).sort()).toEqual(["node-1", "node-2"]);
  });

  it("separates cards of one class with different memory", () => {
    const fleet = fleetFromHardwareSpec(parseHardwareSpec("2xA100-40GB@ib,2xA100-80GB@ib"));
    expect(fleet.pools.map((pool) => pool.cardMemoryBytes / GiB)).toEqual([80, 40]);
  });

  it("turns cpu:Nc/Mg into a CPU host", () => {
    const fleet = fleetFromHardwareSpec(parseHardwareSpec("cpu:32c/256g"));
    expect(fleet.pools).toHaveLength(0);
    expect(fleet.cpuNodes).toEqual([{ name: "cpu-1", memoryBytes: 256 * GiB, cpuCores: 32 }]);
  });
});

describe("fleetFromNodes", () => {
  const gpu = (index: number, free: boolean, fabric = "nvl0") => ({ index, class: "h100", memoryBytes: 80 * GiB, fabric, free });

  it("counts free and total cards per node and leaves lost nodes out", () => {
    const nodes: InventoryNode[] = [
      { name: "a", state: "ready", gpus: [gpu(0, true), gpu(1, false)], memoryBytes: 512 * GiB, cpuCores: 64 },
      { name: "b", state: "lost", gpus: [gpu(0, true), gpu(1, true)], memoryBytes: 512 * GiB, cpuCores: 64 },
    ];
    const fleet = fleetFromNodes(nodes);
    expect(fleet.pools).toHaveLength(1);
    expect(fleet.pools[0]?.nodes).toEqual([{ name: "a", cardsTotal: 2, cardsFree: 1 }]);
    expect(fleet.cpuNodes.map((node) => node.name)).toEqual(["a"]);
  });

  it("splits one node's cards by fabric", () => {
    const fleet = fleetFromNodes([
      { name: "a", state: "ready", gpus: [gpu(0, true, "x"), gpu(1, true, "y")], memoryBytes: 0, cpuCores: 8 },
    ]);
    expect(fleet.pools.map((pool) => pool.fabric).sort()).toEqual(["x", "y"]);
    expect(fleet.cpuNodes).toEqual([]);
  });
});
