import { describe, expect, it } from "vitest";
import type { ArmSlotReport } from "../../protocol/arm-counts-feed.js";
import { ArmReporter } from "./arm-reporter.js";
import { ArmStats, armSlotMs } from "./arm-stats.js";

describe("ArmReporter", () => {
  it("sends a failed report's slots again with the next one, and stops resending old slots after a success", async () => {
    const stats = new ArmStats();
    let now = 100 * armSlotMs;
    const sent: ArmSlotReport[][] = [];
    let refuse = true;
    const failures: unknown[] = [];
    const reporter = new ArmReporter(
      stats,
      async (slots) => {
        if (refuse) throw new Error("server down");
        sent.push([...slots]);
      },
      (error) => failures.push(error),
      () => now,
    );
    stats.record("m", "canary", 20, false, now);
    await reporter.report();
    expect(failures).toHaveLength(1);
    refuse = false;
    now += 3 * armSlotMs;
    stats.record("m", "stable", 20, true, now);
    await reporter.report();
    // Both the slot that failed to send and the new one.
    expect(sent[0]?.map((slot) => [slot.arm, slot.requests, slot.errors])).toEqual([
      ["canary", 1, 0],
      ["stable", 1, 1],
    ]);
    const filling = now;
    now += 10 * armSlotMs;
    stats.record("m", "stable", 20, false, now);
    await reporter.report();
    // The slot still filling at the last success is sent again (it may have grown); the older ones are not.
    expect(sent[1]?.map((slot) => slot.start)).toEqual([filling, now]);
  });
});
