import { describe, expect, it } from "vitest";
import { oneNodeSpec, parseHardwareSpec } from "./hardware-spec.js";
import { cardClassFromProductName } from "./card-classes.js";

describe("parseHardwareSpec", () => {
  it("reads one node per group with its class, memory and fabric", () => {
    const spec = parseHardwareSpec("2xH100-80GB@nvl0,4xL40S-48GB@pcie,cpu:32c/256g");
    expect(spec.groups).toEqual([
      { nodes: 1, count: 2, cardClass: "h100", label: "H100-80GB", memoryBytes: 80 * 1024 ** 3, fabric: "nvl0" },
      { nodes: 1, count: 4, cardClass: "l40s", label: "L40S-48GB", memoryBytes: 48 * 1024 ** 3, fabric: "pcie" },
    ]);
    expect(spec.host).toEqual({ cpuCores: 32, memoryBytes: 256 * 1024 ** 3 });
  });

  it("fills in the usual memory of a known card and leaves the fabric to the node", () => {
    const spec = parseHardwareSpec("8xH100");
    expect(spec.groups[0]).toMatchObject({ count: 8, cardClass: "h100", memoryBytes: 80 * 1024 ** 3, fabric: undefined });
  });

  it("reads the memory other processes hold on each card of a group", () => {
    const spec = parseHardwareSpec("2xH100-80GB@nvl0+foreign=20g,1xL4");
    expect(spec.groups[0]).toMatchObject({ count: 2, fabric: "nvl0", foreignBytes: 20 * 1024 ** 3 });
    expect(spec.groups[1]?.foreignBytes).toBeUndefined();
    expect(() => parseHardwareSpec("1xL4-24GB+foreign=30g")).toThrow(/30 GiB of other processes on a 24 GiB card/);
  });

  it("refuses a group it cannot read, naming the group and the form", () => {
    expect(() => parseHardwareSpec("2xH100-80GB@nvl0,two cards")).toThrow(/"two cards" is not COUNTxCARD-MEMORY@FABRIC/);
    expect(() => parseHardwareSpec("0xH100-80GB")).toThrow(/count must be 1 or more/);
    expect(() => parseHardwareSpec("2xMysteryCard")).toThrow(/memory llmgw does not know/);
  });
});

describe("parseHardwareSpec with a node count", () => {
  it("reads NODESxCARDSxCLASS as that many alike nodes", () => {
    const spec = parseHardwareSpec("2x8xH100-80GB@ib0,4xL40S");
    expect(spec.groups[0]).toMatchObject({ nodes: 2, count: 8, cardClass: "h100", fabric: "ib0" });
    expect(spec.groups[1]).toMatchObject({ nodes: 1, count: 4, cardClass: "l40s" });
  });

  it("does not take a card name that starts with digits for a node count", () => {
    expect(parseHardwareSpec("2x4090-24GB").groups[0]).toMatchObject({ nodes: 1, count: 2, label: "4090-24GB" });
  });

  it("is refused for one agent's pretend cards, which are one node", () => {
    expect(() => oneNodeSpec(parseHardwareSpec("2x8xH100-80GB@ib0"), "2x8xH100-80GB@ib0")).toThrow(/gives 2 nodes in one group, and an agent is one node/);
    expect(oneNodeSpec(parseHardwareSpec("8xH100-80GB@ib0"), "8xH100-80GB@ib0").groups).toHaveLength(1);
  });

  it("refuses no nodes, naming the group", () => {
    expect(() => parseHardwareSpec("0x8xH100-80GB@ib0")).toThrow(/"0x8xH100-80GB@ib0" has no nodes/);
  });
});

describe("cardClassFromProductName", () => {
  it.each([
    ["NVIDIA H100 80GB HBM3", "h100"],
    ["NVIDIA H100 NVL", "h100"],
    ["NVIDIA A100-SXM4-80GB", "a100"],
    ["NVIDIA A100-PCIE-40GB", "a100"],
    ["NVIDIA L40S", "l40s"],
    ["NVIDIA L40", "l40"],
    ["NVIDIA L4", "l4"],
    ["NVIDIA GeForce RTX 4090", "rtx4090"],
    ["NVIDIA RTX A6000", "a6000"],
    ["NVIDIA RTX 6000 Ada Generation", "rtx6000ada"],
    ["Tesla T4", "t4"],
    ["NVIDIA A10G", "a10g"],
    ["NVIDIA Strange Card 9", "strangecard9"],
  ])("%s is %s", (productName, expected) => {
    expect(cardClassFromProductName(productName)).toBe(expected);
  });
});
