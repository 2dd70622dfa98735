import { describe, expect, it } from "vitest";
import { replicaStates } from "../../protocol/agent-protocol.js";
import { replicaTransitions, transitionRefusal } from "./replica-transitions.js";

describe("the replica's states", () => {
  it("allows the life of a replica: fetch, start, serve, drain, stop", () => {
    const life = ["fetching", "starting", "ready", "draining", "stopped"] as const;
    for (let step = 1; step < life.length; step += 1) expect(transitionRefusal(life[step - 1] as (typeof life)[number], life[step] as (typeof life)[number])).toBeUndefined();
  });

  it("allows a failure from every state in which something runs", () => {
    for (const from of ["fetching", "starting", "ready", "draining"] as const) expect(transitionRefusal(from, "failed")).toBeUndefined();
  });

  it("refuses a transition it does not list, saying where the replica may go instead", () => {
    expect(transitionRefusal("fetching", "ready")).toBe("a replica cannot go from fetching to ready: from fetching it goes only to starting, draining, failed");
    expect(transitionRefusal("ready", "starting")).toBeDefined();
    expect(transitionRefusal("draining", "ready")).toBeDefined();
  });

  it("refuses any way out of an ended replica: a start under its id is a new replica", () => {
    for (const to of replicaStates) {
      expect(transitionRefusal("stopped", to)).toBe(`a replica cannot go from stopped to ${to}: from stopped it goes only to nothing (it has ended)`);
      expect(transitionRefusal("failed", to)).toBeDefined();
    }
  });

  it("names every state of the protocol, and only those", () => {
    expect(Object.keys(replicaTransitions).sort()).toEqual([...replicaStates].sort());
    for (const targets of Object.values(replicaTransitions)) for (const target of targets) expect(replicaStates).toContain(target);
  });
});
