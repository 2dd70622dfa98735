import { describe, expect, it } from "vitest";
import { splitsHeads, splitsHeadsReason } from "./splits-heads.js";

describe("splitsHeads", () => {
  it("accepts cards that divide both attention and KV heads", () => {
    expect(splitsHeads(8, 64, 8)).toBe(true);
    expect(splitsHeads(2, 64, 8)).toBe(true);
  });

  it("accepts more cards than KV heads when they are a multiple (KV heads replicated)", () => {
    expect(splitsHeads(8, 32, 4)).toBe(true);
  });

  it("refuses cards that do not divide the attention heads (Qwen2.5-7B's 28 heads on 8 cards)", () => {
    expect(splitsHeads(8, 28, 4)).toBe(false);
    expect(splitsHeadsReason(8, 28, 4)).toBe("8 cards do not divide the 28 attention heads");
  });

  it("refuses two cards for a model with three KV heads", () => {
    expect(splitsHeads(2, 12, 3)).toBe(false);
    expect(splitsHeadsReason(2, 12, 3)).toContain("3 KV heads");
  });

  it("refuses zero, negative and fractional card counts", () => {
    expect(splitsHeads(0, 32, 8)).toBe(false);
    expect(splitsHeads(-2, 32, 8)).toBe(false);
    expect(splitsHeads(1.5, 32, 8)).toBe(false);
  });

  it("always accepts one card", () => {
    expect(splitsHeads(1, 28, 4)).toBe(true);
  });
});
