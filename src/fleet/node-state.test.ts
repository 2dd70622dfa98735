import { describe, expect, it } from "vitest";
import { nodeState } from "./node-state.js";

const base = { heartbeatDeadlineMs: 15_000, settlingWindowMs: 20_000, serverStartedMs: 0, everyNodeReportedSinceStart: false };

describe("nodeState", () => {
  it("is ready when heard from within the deadline", () => {
    expect(nodeState({ ...base, lastSeenMs: 100_000, nowMs: 110_000 })).toBe("ready");
  });

  it("is lost when silent past the deadline, long after the server started", () => {
    expect(nodeState({ ...base, lastSeenMs: 100_000, nowMs: 116_000 })).toBe("lost");
  });

  it("is settling, not lost, in the window after a server restart", () => {
    expect(nodeState({ ...base, serverStartedMs: 200_000, lastSeenMs: 100_000, nowMs: 205_000 })).toBe("settling");
  });

  it("is lost inside the window once every other node has reported", () => {
    expect(nodeState({ ...base, serverStartedMs: 200_000, lastSeenMs: 100_000, nowMs: 205_000, everyNodeReportedSinceStart: true })).toBe("lost");
  });

  it("is lost when the window has passed without a report", () => {
    expect(nodeState({ ...base, serverStartedMs: 200_000, lastSeenMs: 100_000, nowMs: 221_000 })).toBe("lost");
  });
});
