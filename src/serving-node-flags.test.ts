import { describe, expect, it } from "vitest";
import { servingNodeFlags, tunedNodeArguments } from "./serving-node-flags.js";

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
