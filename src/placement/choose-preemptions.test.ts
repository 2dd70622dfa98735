import { describe, expect, it } from "vitest";
import type { ModelClass } from "../catalog/schema.js";
import { choosePreemptions } from "./choose-preemptions.js";
import type { ModelStanding } from "./preemption-rules.js";
import { demand, gpuProfile, held, node } from "./testing/fleet-builder.js";
import type { Snapshot } from "./types.js";

const standing = (modelClass: ModelClass, min: number, replicas: number): ModelStanding => ({ modelClass, min, replicas });
const victimIds = (choice: ReturnType<typeof choosePreemptions>) => (choice.possible ? choice.victims.map((victim) => victim.id) : choice.reason);

describe("choosePreemptions", () => {
  const oneNode = (modelClass: ModelClass): Snapshot => ({ nodes: [node("a", "2xh100-80@nvl0")], replicas: [held("r1", "batch", "a", [0, 1], modelClass)] });

  it("stops a standard replica to place a critical one, on the cards it frees", () => {
    const choice = choosePreemptions(oneNode("standard"), demand("prod", 1, [gpuProfile(2)], "critical"), new Map([["batch", standing("standard", 1, 1)]]));
    expect(choice).toMatchObject({ possible: true, placement: { model: "prod", profile: "gpu2", node: "a", cards: [0, 1] } });
    expect(victimIds(choice)).toEqual(["r1"]);
  });

  it("stops an opportunistic replica for a standard one", () => {
    const choice = choosePreemptions(oneNode("opportunistic"), demand("chat", 1, [gpuProfile(2)]), new Map([["batch", standing("opportunistic", 0, 1)]]));
    expect(victimIds(choice)).toEqual(["r1"]);
  });

  it("never stops a critical replica for a standard one", () => {
    const choice = choosePreemptions(oneNode("critical"), demand("chat", 1, [gpuProfile(2)]), new Map([["batch", standing("critical", 0, 1)]]));
    expect(choice).toEqual({ possible: false, reason: "no room even by preemption: 0 of 1 node: 1 has no free h100 even after stopping every replica a standard model may take" });
  });

  it("never stops a standard replica for an opportunistic one", () => {
    const choice = choosePreemptions(oneNode("standard"), demand("on-demand", 1, [gpuProfile(2)], "opportunistic"), new Map([["batch", standing("standard", 0, 1)]]));
    expect(choice.possible).toBe(false);
  });

  describe("within a class", () => {
    const twoReplicas: Snapshot = {
      nodes: [node("a", "1xh100-80@nvl0"), node("b", "1xh100-80@nvl1")],
      replicas: [held("r1", "grown", "a", [0], "critical"), held("r2", "grown", "b", [0], "critical")],
    };

    it("lets a model below its minimum take what another grew into above its own", () => {
      const models = new Map([
        ["grown", standing("critical", 1, 2)],
        ["short", standing("critical", 1, 0)],
      ]);
      expect(victimIds(choosePreemptions(twoReplicas, demand("short", 1, [gpuProfile(1)], "critical"), models))).toHaveLength(1);
    });

    it("never takes another model's minimum", () => {
      const models = new Map([
        ["grown", standing("critical", 2, 2)],
        ["short", standing("critical", 1, 0)],
      ]);
      expect(choosePreemptions(twoReplicas, demand("short", 1, [gpuProfile(1)], "critical"), models).possible).toBe(false);
    });

    it("does not let a model at its minimum grow by taking from its own class", () => {
      const models = new Map([
        ["grown", standing("critical", 1, 2)],
        ["short", standing("critical", 1, 1)],
      ]);
      expect(choosePreemptions(twoReplicas, demand("short", 1, [gpuProfile(1)], "critical"), models).possible).toBe(false);
    });
  });

  it("prefers an opportunistic victim to a standard one", () => {
    const snapshot: Snapshot = {
      nodes: [node("a", "1xh100-80@nvl0"), node("b", "1xh100-80@nvl1")],
      replicas: [held("r-standard", "s", "a", [0], "standard"), held("r-opportunistic", "o", "b", [0], "opportunistic")],
    };
    const models = new Map([
      ["s", standing("standard", 1, 1)],
      ["o", standing("opportunistic", 0, 1)],
    ]);
    const choice = choosePreemptions(snapshot, demand("prod", 1, [gpuProfile(1)], "critical"), models);
    expect(victimIds(choice)).toEqual(["r-opportunistic"]);
    expect(choice).toMatchObject({ placement: { node: "b" } });
  });

  it("chooses the fewest victims", () => {
    const snapshot: Snapshot = {
      nodes: [node("a", "2xh100-80@nvl0"), node("b", "2xh100-80@nvl1")],
      replicas: [held("r1", "x", "a", [0], "opportunistic"), held("r2", "y", "a", [1], "opportunistic"), held("r3", "z", "b", [0, 1], "opportunistic")],
    };
    expect(victimIds(choosePreemptions(snapshot, demand("prod", 1, [gpuProfile(2)]), new Map()))).toEqual(["r3"]);
  });

  it("stops only what it needs beside free cards", () => {
    const snapshot: Snapshot = {
      nodes: [node("a", "4xh100-80@nvl0")],
      replicas: [held("r1", "x", "a", [0], "opportunistic"), held("r2", "x", "a", [1], "opportunistic"), held("r3", "x", "a", [2], "opportunistic")],
    };
    const choice = choosePreemptions(snapshot, demand("prod", 1, [gpuProfile(2)]), new Map([["x", standing("opportunistic", 0, 3)]]));
    expect(victimIds(choice)).toHaveLength(1);
    expect(choice.possible && choice.placement.cards).toContain(3);
  });

  it("stops nothing when the replica already fits", () => {
    const choice = choosePreemptions({ nodes: [node("a", "1xh100-80@nvl0")], replicas: [] }, demand("prod", 1, [gpuProfile(1)]), new Map());
    expect(victimIds(choice)).toEqual([]);
  });

  it("never stops cards on another fabric to make up a replica", () => {
    const snapshot: Snapshot = { nodes: [node("a", "1xh100-80@f0+1xh100-80@f1")], replicas: [held("r1", "x", "a", [0], "opportunistic")] };
    const choice = choosePreemptions(snapshot, demand("prod", 1, [gpuProfile(2)], "critical"), new Map());
    expect(choice).toEqual({ possible: false, reason: "no room even by preemption: 0 of 1 node: 1 has 2 h100 but at most 1 on one fabric, and needs 2" });
  });
});
