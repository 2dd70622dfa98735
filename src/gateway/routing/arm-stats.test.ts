import { describe, expect, it } from "vitest";
import { ArmStats, armSlotMs, summariseSlots } from "./arm-stats.js";

describe("ArmStats", () => {
  it("counts requests, errors and the p95 bucket per model and arm", () => {
    const stats = new ArmStats();
    const now = 1_000_000;
    for (let index = 0; index < 95; index += 1) stats.record("m", "canary", 40, false, now);
    for (let index = 0; index < 5; index += 1) stats.record("m", "canary", 900, true, now);
    stats.record("m", "stable", 10, false, now);
    expect(summariseSlots(stats.slots("m", "canary", 0))).toEqual({ requests: 100, errors: 5, p95_ms: 50 });
    expect(summariseSlots(stats.slots("m", "stable", 0))).toEqual({ requests: 1, errors: 0, p95_ms: 10 });
  });

  it("reads only the slots since a time, and keeps a bounded number of slots", () => {
    const stats = new ArmStats();
    for (let slot = 0; slot < 1000; slot += 1) stats.record("m", "stable", 1, false, slot * armSlotMs);
    expect(stats.slots("m", "stable", 0).length).toBe(720);
    expect(summariseSlots(stats.slots("m", "stable", 998 * armSlotMs)).requests).toBe(2);
  });

  it("never counts an earlier canary's requests for one that began in the same slot", () => {
    const stats = new ArmStats();
    // A failing canary ends at 1 s; the next begins at 2 s, inside the same 5 s slot.
    for (let index = 0; index < 10; index += 1) stats.record("m", "canary", 1, true, 1000);
    stats.startEpoch("m", 2000);
    for (let index = 0; index < 4; index += 1) stats.record("m", "canary", 1, false, 3000);
    stats.record("m", "stable", 1, false, 3000);
    expect(summariseSlots(stats.slots("m", "canary", 2000, 2000))).toEqual({ requests: 4, errors: 0, p95_ms: 5 });
    expect(summariseSlots(stats.slots("m", "stable", 2000, 2000)).requests).toBe(1);
    // Without the canary's start, the shared slot's older errors would be read.
    expect(summariseSlots(stats.slots("m", "canary", 2000)).errors).toBe(10);
  });

  it("has no p95 without requests", () => {
    expect(summariseSlots([])).toEqual({ requests: 0, errors: 0, p95_ms: null });
  });
});
