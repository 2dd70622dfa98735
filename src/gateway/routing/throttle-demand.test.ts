import { describe, expect, it } from "vitest";
import { throttleDemand } from "./throttle-demand.js";

describe("throttleDemand", () => {
  it("reports a model once per period however many requests queue for it, and each model on its own", () => {
    let now = 1_000;
    const reported: string[] = [];
    const report = throttleDemand((model) => reported.push(model), 5_000, () => now);
    report("a");
    report("a");
    report("b");
    now += 4_999;
    report("a");
    now += 1;
    report("a");
    expect(reported).toEqual(["a", "b", "a"]);
  });
});
