import { describe, expect, it } from "vitest";
import { finishReason } from "./finish-reason.js";

describe("finishReason", () => {
  it("says stop when the model ended its answer", () => {
    expect(finishReason({ endOfGeneration: true, stopMatched: false, toolCalls: false })).toBe("stop");
  });
  it("says stop when a stop string matched", () => {
    expect(finishReason({ endOfGeneration: false, stopMatched: true, toolCalls: false })).toBe("stop");
  });
  it("says length only when nothing ended the answer but its budget", () => {
    expect(finishReason({ endOfGeneration: false, stopMatched: false, toolCalls: false })).toBe("length");
  });
  it("says tool_calls for a call, however the text ended", () => {
    expect(finishReason({ endOfGeneration: true, stopMatched: false, toolCalls: true })).toBe("tool_calls");
  });
});
