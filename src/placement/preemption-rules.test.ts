import { describe, expect, it } from "vitest";
import { replicasItMayTake, type ModelStanding } from "./preemption-rules.js";

const model = (modelClass: ModelStanding["modelClass"], min: number, replicas: number): ModelStanding => ({ modelClass, min, replicas });

describe("replicasItMayTake", () => {
  it("lets critical take every replica of standard and opportunistic models, minimum included", () => {
    expect(replicasItMayTake(model("critical", 1, 1), model("standard", 2, 2))).toBe(2);
    expect(replicasItMayTake(model("critical", 1, 5), model("opportunistic", 0, 3))).toBe(3);
  });

  it("lets standard take opportunistic replicas, and nothing of critical", () => {
    expect(replicasItMayTake(model("standard", 1, 0), model("opportunistic", 0, 2))).toBe(2);
    expect(replicasItMayTake(model("standard", 3, 0), model("critical", 0, 4))).toBe(0);
  });

  it("lets opportunistic take nothing from the classes above it", () => {
    expect(replicasItMayTake(model("opportunistic", 0, 0), model("standard", 0, 3))).toBe(0);
    expect(replicasItMayTake(model("opportunistic", 0, 0), model("critical", 0, 3))).toBe(0);
  });

  it("within a class, lets a model below its minimum take only what another grew into above its own", () => {
    expect(replicasItMayTake(model("critical", 2, 1), model("critical", 1, 3))).toBe(2);
    expect(replicasItMayTake(model("critical", 2, 1), model("critical", 3, 3))).toBe(0);
    expect(replicasItMayTake(model("standard", 1, 0), model("standard", 0, 2))).toBe(2);
  });

  it("within a class, lets a model at or above its minimum take nothing", () => {
    expect(replicasItMayTake(model("standard", 1, 1), model("standard", 0, 4))).toBe(0);
    expect(replicasItMayTake(model("opportunistic", 0, 0), model("opportunistic", 0, 4))).toBe(0);
  });
});
