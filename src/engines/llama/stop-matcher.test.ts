import { describe, expect, it } from "vitest";
import { StopMatcher } from "./stop-matcher.js";

function run(stops: string[], pieces: string[]): { sent: string[]; text: string; stopped: boolean } {
  const matcher = new StopMatcher(stops);
  const sent: string[] = [];
  for (const piece of pieces) {
    const { emit, stopped } = matcher.push(piece);
    if (emit !== "") sent.push(emit);
    if (stopped) return { sent, text: matcher.text, stopped };
  }
  const rest = matcher.flush();
  if (rest !== "") sent.push(rest);
  return { sent, text: matcher.text, stopped: false };
}

describe("stop strings over streamed text", () => {
  it("ends at a stop string split over pieces, sending nothing of it", () => {
    const result = run(["END"], ["one ", "two E", "N", "D three"]);
    expect(result).toEqual({ sent: ["one ", "two "], text: "one two ", stopped: true });
  });

  it("lets out what only looked like a stop string's start", () => {
    const result = run(["END"], ["we", " E", "ND", "x"].slice(0, 2).concat(["ast"]));
    expect(result.sent.join("")).toBe("we East");
    expect(result.stopped).toBe(false);
  });

  it("stops at the earliest of several stop strings", () => {
    expect(run(["b", "a"], ["xxab"]).text).toBe("xx");
  });

  it("passes everything through without stop strings", () => {
    expect(run([], ["a", "b"]).sent).toEqual(["a", "b"]);
  });
});
