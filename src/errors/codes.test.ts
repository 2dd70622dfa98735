import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { statusForCode } from "../protocol/http-status.js";
import { errorCodes } from "./codes.js";

const reference = readFileSync(new URL("../../docs/ERRORS.md", import.meta.url), "utf8");

describe("error codes", () => {
  it.each(Object.keys(errorCodes))("%s is documented in docs/ERRORS.md with its HTTP status", (code) => {
    const row = reference.split("\n").find((line) => line.startsWith(`| \`${code}\` |`));
    expect(row, `docs/ERRORS.md has no row for ${code}`).toBeDefined();
    expect(row).toContain(`| ${statusForCode[code as keyof typeof statusForCode]} |`);
  });

  it("documents no code that does not exist", () => {
    const documented = [...reference.matchAll(/^\| `([a-z_]+)` \|/gm)].map((match) => match[1]);
    expect(documented.filter((code) => !(code as string in errorCodes))).toEqual([]);
  });
});
