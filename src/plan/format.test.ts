import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { formatContext, parseTokenCount } from "./format.js";

describe("parseTokenCount", () => {
  it("reads the forms the plan prints, k and M being powers of 1024", () => {
    expect(parseTokenCount("32768")).toBe(32768);
    expect(parseTokenCount("32k")).toBe(32768);
    expect(parseTokenCount("32K")).toBe(32768);
    expect(parseTokenCount("128k")).toBe(131072);
    expect(parseTokenCount("1M")).toBe(1048576);
    expect(parseTokenCount(" 8k ")).toBe(8192);
  });

  it("refuses what is not a whole count", () => {
    for (const text of ["", "k", "32 k", "1.5k", "-4k", "32kb", "1m", "32000tokens", "0x20"]) expect(parseTokenCount(text)).toBeUndefined();
  });

  it("reads back every context the plan prints as at most the tokens it stands for, and prints the same again", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 16 * 1024 * 1024 }), (tokens) => {
        const printed = formatContext(tokens);
        const read = parseTokenCount(printed);
        expect(read).toBeDefined();
        expect(read as number).toBeLessThanOrEqual(tokens);
        expect(formatContext(read as number)).toBe(printed);
      }),
    );
  });
});
