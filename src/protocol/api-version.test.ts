import { describe, expect, it } from "vitest";
import { negotiateApiVersion, parseApiRange, softwareVersion } from "./api-version.js";

describe("API version negotiation", () => {
  it("uses the newest version both sides speak", () => {
    expect(negotiateApiVersion({ min: 1, max: 3 }, { min: 1, max: 2 })).toEqual({ version: 2 });
    expect(negotiateApiVersion({ min: 1, max: 1 }, { min: 1, max: 2 })).toEqual({ version: 1 });
  });

  it("names the older side as the one to upgrade when none is shared", () => {
    expect(negotiateApiVersion({ min: 3, max: 4 }, { min: 1, max: 2 })).toEqual({ upgrade: "server" });
    expect(negotiateApiVersion({ min: 1, max: 1 }, { min: 2, max: 3 })).toEqual({ upgrade: "client" });
  });

  it("reads a single version or a range", () => {
    expect(parseApiRange("2")).toEqual({ min: 2, max: 2 });
    expect(parseApiRange("1-3")).toEqual({ min: 1, max: 3 });
    expect(parseApiRange("3-1")).toBeUndefined();
    expect(parseApiRange("v1")).toBeUndefined();
  });

  it("knows its own version from package.json", () => {
    expect(softwareVersion).toMatch(/^\d+\.\d+\.\d+/);
    expect(softwareVersion).not.toBe("0.0.0");
  });
});
