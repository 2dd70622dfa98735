import { describe, expect, it } from "vitest";
import { chooseSlot, commonPrefixLength, reusableTokens } from "./slot-cache.js";

describe("the slot cache's decisions", () => {
  it("gives a prompt the free slot that shares the longest prefix with it", () => {
    const slots = [
      { tokens: [1, 2, 9], lastUsed: 1 },
      { tokens: [1, 2, 3, 4], lastUsed: 2 },
      { tokens: [], lastUsed: 0 },
    ];
    expect(chooseSlot(slots, [1, 2, 3, 4, 5], true)).toBe(1);
  });

  it("breaks a tie by the least recently used slot", () => {
    const slots = [
      { tokens: [7, 7], lastUsed: 5 },
      { tokens: [8, 8], lastUsed: 3 },
      { tokens: [9], lastUsed: 4 },
    ];
    expect(chooseSlot(slots, [1, 2], true)).toBe(1);
  });

  it("ignores the cached tokens when the request turns cache_prompt off", () => {
    const slots = [
      { tokens: [1, 2, 3], lastUsed: 9 },
      { tokens: [], lastUsed: 1 },
    ];
    expect(chooseSlot(slots, [1, 2, 3, 4], false)).toBe(1);
  });

  it("finds no slot when none is free", () => {
    expect(chooseSlot([], [1], true)).toBeUndefined();
  });

  it("reuses the common prefix and evaluates the rest", () => {
    expect(commonPrefixLength([1, 2, 3, 9], [1, 2, 3, 4, 5])).toBe(3);
    expect(reusableTokens([1, 2, 3, 9], [1, 2, 3, 4, 5], true)).toBe(3);
    expect(reusableTokens([1, 2, 3, 9], [1, 2, 3, 4, 5], false)).toBe(0);
  });

  it("evaluates a fully cached prompt's last token again, for the next token's probabilities", () => {
    expect(reusableTokens([1, 2, 3, 4], [1, 2, 3], true)).toBe(2);
    expect(reusableTokens([1, 2, 3], [1, 2, 3], true)).toBe(2);
  });
});
