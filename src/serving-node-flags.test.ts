import { describe, expect, it } from "vitest";
import { serverHeapGrowingPercent, serverHeapSetting, servingNodeFlags, tunedNodeArguments } from "./serving-node-flags.js";

describe("the node flags llmgw starts its serving commands with", () => {
  it("sizes the young generation for `server` and `gateway`, keeping the node arguments given", () => {
    expect(tunedNodeArguments("server", [], undefined, undefined)).toEqual([...servingNodeFlags]);
    expect(tunedNodeArguments("gateway", ["--inspect"], "", undefined)).toEqual([...servingNodeFlags, "--inspect"]);
  });

  it("leaves every other command as started: the CLI, the agent, the demo", () => {
    for (const command of ["ctl", "agent", "demo", "sim-engine", undefined]) expect(tunedNodeArguments(command, [], undefined, undefined)).toBeUndefined();
  });

  it("keeps an operator's own young-generation size, given to node or in NODE_OPTIONS, in either spelling", () => {
    expect(tunedNodeArguments("server", ["--max-semi-space-size=8"], undefined, undefined)).toBeUndefined();
    expect(tunedNodeArguments("server", ["--min_semi_space_size=4"], undefined, undefined)).toBeUndefined();
    expect(tunedNodeArguments("gateway", [], "--enable-source-maps --max-semi-space-size=32", undefined)).toBeUndefined();
    // What the restarted process sees: it is done.
    expect(tunedNodeArguments("server", [...servingNodeFlags], undefined, undefined)).toBeUndefined();
  });

  it("runs as started with LLMGW_NODE_TUNING=off", () => {
    expect(tunedNodeArguments("server", [], undefined, "off")).toBeUndefined();
  });
});

describe("the old generation's growth llmgw sets in its server", () => {
  it("is set for `server` alone: the gateway's live heap is small, and the CLI, the agent and the demo run as started", () => {
    expect(serverHeapSetting("server", [], undefined)).toBe(`--heap-growing-percent=${serverHeapGrowingPercent}`);
    for (const command of ["gateway", "ctl", "agent", "demo", undefined]) expect(serverHeapSetting(command, [], undefined)).toBeUndefined();
  });

  it("keeps an operator's own growth given to node, in either spelling, and is off with LLMGW_NODE_TUNING=off", () => {
    expect(serverHeapSetting("server", ["--heap-growing-percent=50"], undefined)).toBeUndefined();
    expect(serverHeapSetting("server", ["--inspect", "--heap_growing_percent=0"], undefined)).toBeUndefined();
    expect(serverHeapSetting("server", [], "off")).toBeUndefined();
  });
});
