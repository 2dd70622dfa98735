import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { readAsPasted } from "../../test/support/read-as-pasted.js";
import { quoteForShell } from "./quote-for-shell.js";

describe("quoteForShell", () => {
  const texts = ["/tmp/llmgw-data", "", "Application Support/llmgw", "it's", "#hash", "=ls", "a=b", "*.json", "x?y", "[ab]", "hi!", "$HOME", "`id`", 'say "x"', "back\\slash", "line\nbreak"];

  it("gives a word bash and zsh both read back as the text itself", () => {
    for (const text of texts) {
      const quoted = quoteForShell(text);
      expect(readAsPasted(quoted), JSON.stringify(text)).toEqual({ words: [text], hazards: [] });
      expect(execFileSync("bash", ["--norc", "-c", `printf '%s' ${quoted}`], { encoding: "utf8" }), JSON.stringify(text)).toBe(text);
    }
  });

  it("leaves a plain path bare, as a person would type it", () => {
    expect(quoteForShell("/home/ada/llmgw-data")).toBe("/home/ada/llmgw-data");
    expect(quoteForShell("a=b")).toBe("a=b");
    expect(quoteForShell("=ls")).toBe("'=ls'");
  });
});
