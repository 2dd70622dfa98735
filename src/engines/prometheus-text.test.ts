import { describe, expect, it } from "vitest";
import { readPrometheusSamples } from "./prometheus-text.js";

describe("reading Prometheus text", () => {
  it("reads one value per label set, with braces and spaces inside label values", () => {
    const samples = readPrometheusSamples(
      ['m{a="x}y",b="with space"} 1', 'm{a="z"} 2.5e1 1700000000000', "other 3"].join("\n"),
      new Set(["m"]),
    );
    expect(samples.get("m")).toEqual([1, 25]);
    expect(samples.has("other")).toBe(false);
  });

  it("skips NaN, infinities, comments and unreadable lines", () => {
    const samples = readPrometheusSamples(["# HELP m help", "m NaN", "m +Inf", "m{broken 1", "m", "m 4"].join("\n"), new Set(["m"]));
    expect(samples.get("m")).toEqual([4]);
  });
});
