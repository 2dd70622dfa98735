import { describe, expect, it } from "vitest";
import { jsonComplete } from "./json-complete.js";

describe("jsonComplete", () => {
  it("calls an object complete once it closes", () => {
    expect(jsonComplete('{"a": [1, 2]')).toBe(false);
    expect(jsonComplete('{"a": [1, 2]}\n')).toBe(true);
  });
  it("does not take a closing bracket inside a string for the end", () => {
    expect(jsonComplete('{"a": "}')).toBe(false);
  });
  it("never calls a bare number complete", () => {
    expect(jsonComplete("12")).toBe(false);
  });
});
