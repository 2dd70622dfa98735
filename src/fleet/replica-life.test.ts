import { describe, expect, it } from "vitest";
import { replicaStates } from "../protocol/agent-protocol.js";
import { countsTowardModel, holdsCards, replicaLife } from "./replica-life.js";

describe("replica life", () => {
  it("keeps a draining replica's cards taken while it no longer counts toward its model", () => {
    expect(holdsCards("draining")).toBe(true);
    expect(countsTowardModel("draining")).toBe(false);
  });

  it("frees the cards of stopped and failed replicas, and counts those on their way up and on a lost node", () => {
    expect(["stopped", "failed"].map((state) => holdsCards(state as "stopped"))).toEqual([false, false]);
    expect(["fetching", "starting", "ready", "lost"].map((state) => countsTowardModel(state as "ready"))).toEqual([true, true, true, true]);
  });

  it("places every state the protocol knows", () => {
    expect(replicaStates.map(replicaLife)).toEqual(["live", "live", "live", "leaving", "gone", "gone"]);
  });
});
