import { describe, expect, it } from "vitest";
import { model, node, now, observed, replica, settings } from "../../test/support/reconcile-fixtures.js";
import { diff } from "./diff.js";
import { nextMoment } from "./next-moment.js";
import type { Desired, Observed } from "./types.js";

/** What diff decides at a moment, as kinds with their targets, to compare one instant with the next. */
function decisionAt(desired: Desired, seen: Observed, atMs: number): string[] {
  return diff(desired, { ...seen, nowMs: atMs }, settings).map((action) => `${action.kind} ${"id" in action ? action.id : action.model}`);
}

/**
 * Each case is a state whose decision time alone changes: the moment must
 * be the first millisecond at which diff answers differently, so a pass
 * timed to it acts then, and none is woken before it for nothing.
 */
const cases: { name: string; desired: Desired; seen: Observed }[] = [
  {
    name: "a withdrawn replica is stopped once the withdraw delay has passed",
    desired: { models: [model("qwen", { min: 0, max: 1 })] },
    seen: observed([node("gpu-1")], [replica("r1", "qwen", "gpu-1", [0], { withdrawnAtMs: now - 300 })]),
  },
  {
    name: "a pending replica is sent again once resume-after has passed",
    desired: { models: [model("qwen")] },
    seen: observed([node("gpu-1")], [replica("r1", "qwen", "gpu-1", [0], { state: "pending", placedAtMs: now - 1000 })]),
  },
  {
    name: "an on-demand model idles out when its idle timeout has passed",
    desired: { models: [model("batch", { min: 0, max: 1, idleTimeoutMs: 60_000, demandAtMs: now - 50_000 })] },
    seen: observed([node("gpu-1")], [replica("r1", "batch", "gpu-1", [0])]),
  },
  {
    name: "a replica added under load is given up when the cool-down has passed",
    desired: { models: [model("chat", { min: 1, max: 3, targetInFlight: 4, busyAtMs: now - 10_000 })] },
    seen: observed([node("gpu-1")], [replica("r1", "chat", "gpu-1", [0], { inFlight: 1 }), replica("r2", "chat", "gpu-1", [1], { inFlight: 0 })]),
  },
  {
    name: "a model in backoff is placed again when its backoff ends",
    desired: { models: [model("flaky", { backoffUntilMs: now + 7000 })] },
    seen: observed([node("gpu-1")]),
  },
];

describe("nextMoment", () => {
  for (const { name, desired, seen } of cases) {
    it(`is the first moment diff decides otherwise: ${name}`, () => {
      const moment = nextMoment(desired, seen, settings);
      expect(moment).toBeGreaterThan(now);
      const at = moment as number;
      expect(decisionAt(desired, seen, at - 1)).toEqual(decisionAt(desired, seen, now));
      expect(decisionAt(desired, seen, at)).not.toEqual(decisionAt(desired, seen, now));
    });
  }

  it("is the earliest of several moments", () => {
    const desired: Desired = { models: [model("qwen"), model("flaky", { backoffUntilMs: now + 7000 })] };
    const seen = observed([node("gpu-1")], [replica("r1", "qwen", "gpu-1", [0], { state: "pending", placedAtMs: now - 1000 })]);
    expect(nextMoment(desired, seen, settings)).toBe(now + 7000 - 3000);
  });

  it("has none for a settled fleet, and none for a moment already past (the pass acts on it now)", () => {
    const settled = observed([node("gpu-1")], [replica("r1", "qwen", "gpu-1", [0])]);
    expect(nextMoment({ models: [model("qwen")] }, settled, settings)).toBeUndefined();
    const past = observed([node("gpu-1")], [replica("r1", "qwen", "gpu-1", [0], { withdrawnAtMs: now - 5000 })]);
    expect(nextMoment({ models: [model("qwen")] }, past, settings)).toBeUndefined();
  });

  it("waits on no draining replica: its agent reports when it stops", () => {
    const draining = observed([node("gpu-1")], [replica("r1", "qwen", "gpu-1", [0], { state: "draining", withdrawnAtMs: now - 300 })]);
    expect(nextMoment({ models: [model("qwen", { min: 0, max: 1 })] }, draining, settings)).toBeUndefined();
  });
});
