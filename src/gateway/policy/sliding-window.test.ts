import { describe, expect, it } from "vitest";
import { SlidingWindow } from "./sliding-window.js";

const at = (seconds: number) => seconds * 1000;

describe("SlidingWindow", () => {
  it("counts the last 60 seconds and forgets each second as it leaves", () => {
    const window = new SlidingWindow();
    window.add(3, at(10));
    window.add(2, at(40));
    expect(window.current(at(69))).toBe(5);
    expect(window.current(at(70))).toBe(2);
    expect(window.current(at(100))).toBe(0);
  });

  it("does not let a client double its limit across a minute boundary", () => {
    const window = new SlidingWindow();
    window.add(10, at(59.5));
    // A fixed per-minute window would reset at 60 s; the sliding one still holds them.
    expect(window.secondsUntilFits(1, 10, at(60.2))).toBe(59);
  });

  it("says how long until a request fits, from when the oldest seconds leave", () => {
    const window = new SlidingWindow();
    window.add(4, at(0));
    window.add(4, at(30));
    expect(window.secondsUntilFits(2, 10, at(45))).toBe(0);
    expect(window.secondsUntilFits(3, 10, at(45))).toBe(15);
    expect(window.secondsUntilFits(7, 10, at(45))).toBe(45);
  });

  it("takes corrections below the estimate without going negative", () => {
    const window = new SlidingWindow();
    window.add(100, at(1));
    window.add(-70, at(5));
    expect(window.current(at(5))).toBe(30);
    window.add(-500, at(6));
    expect(window.current(at(6))).toBe(0);
  });
});
