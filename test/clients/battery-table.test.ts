import { describe, expect, it } from "vitest";
import { batteryTable, failureReason } from "./battery-table.js";

describe("the client battery's table", () => {
  it("has a line per client and row, a column per engine, and the counts", () => {
    const table = batteryTable([
      { client: "openai 6.49", feature: "chat", engine: "sim", outcome: "pass" },
      { client: "openai 6.49", feature: "chat", engine: "llama", outcome: "refused (n)" },
      { client: "openai 6.49", feature: "n", engine: "sim", outcome: "fail: a | b" },
    ]);
    expect(table.split("\n")).toEqual([
      "| Client | Row | simulated engine | built-in llama.cpp |",
      "|---|---|---|---|",
      "| openai 6.49 | chat | pass | refused (n) |",
      "| openai 6.49 | n | fail: a \\| b | not run |",
      "",
      "simulated engine: 1 pass, 0 refused in shape, 1 fail of 2; built-in llama.cpp: 0 pass, 1 refused in shape, 0 fail of 1",
    ]);
  });

  it("keeps a failure's first line, shortened", () => {
    expect(failureReason("400 model tiny runs on llamacpp\n at stack")).toBe("400 model tiny runs on llamacpp");
    expect(failureReason("x".repeat(200))).toHaveLength(90);
  });
});
