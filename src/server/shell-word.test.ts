import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { shellWord } from "./shell-word.js";

describe("shellWord", () => {
  it("leaves a plain path as it is", () => {
    expect(shellWord("/var/lib/llmgw-data")).toBe("/var/lib/llmgw-data");
  });

  it("gives the shell back exactly the text, spaces, quotes and dollars included", () => {
    for (const text of ["/tmp/My Files/llmgw", "it's here", "$HOME/x", "a;b", "*"]) {
      const echoed = execFileSync("sh", ["-c", `printf %s ${shellWord(text)}`], { encoding: "utf8" });
      expect(echoed).toBe(text);
    }
  });
});
