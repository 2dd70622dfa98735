import { describe, expect, it } from "vitest";
import { canaryVerdict, type CanaryGate } from "./canary-verdict.js";

const gate: CanaryGate = { maxErrorRate: 0.05, maxP95Ms: 1000, minRequests: 20, windowMs: 60_000 };

describe("canaryVerdict", () => {
  it("holds while fewer requests than the gate needs were counted, even all failed", () => {
    const verdict = canaryVerdict(gate, { requests: 19, errors: 19, p95_ms: 5 }, 120_000);
    expect(verdict.decision).toBe("hold");
    expect(verdict.reason).toContain("19 of the 20");
  });

  it("aborts with the numbers once the error rate is over the limit", () => {
    const verdict = canaryVerdict(gate, { requests: 40, errors: 3, p95_ms: 100 }, 1000);
    expect(verdict).toEqual({ decision: "abort", reason: "error rate 7.5% over the gate's 5.0% (3 errors in 40 requests, p95 100 ms)" });
  });

  it("aborts when the p95 latency is over the limit", () => {
    const verdict = canaryVerdict(gate, { requests: 40, errors: 0, p95_ms: 2500 }, 1000);
    expect(verdict.decision).toBe("abort");
    expect(verdict.reason).toContain("p95 latency 2500 ms over the gate's 1000 ms");
  });

  it("holds a canary within its limits until it has run for the whole window", () => {
    expect(canaryVerdict(gate, { requests: 40, errors: 2, p95_ms: 1000 }, 59_999).decision).toBe("hold");
  });

  it("promotes a canary that held over the window with enough requests", () => {
    const verdict = canaryVerdict(gate, { requests: 40, errors: 2, p95_ms: 1000 }, 60_000);
    expect(verdict).toEqual({ decision: "promote", reason: "held over 60 s: 2 errors in 40 requests, p95 1000 ms" });
  });

  it("ignores a limit the gate does not set", () => {
    const open: CanaryGate = { ...gate, maxErrorRate: null, maxP95Ms: null };
    expect(canaryVerdict(open, { requests: 40, errors: 40, p95_ms: 99_999 }, 60_000).decision).toBe("promote");
  });
});
