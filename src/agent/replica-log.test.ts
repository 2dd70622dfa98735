import { appendFile, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readLogTail, rotateLogIfLarge } from "./replica-log.js";

let directory: string;
let log: string;

beforeEach(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), "llmgw-log-"));
  log = path.join(directory, "r1.log");
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

describe("replica logs", () => {
  it("rotates by copy and truncate past the size limit, keeping a bounded number of files", async () => {
    for (let round = 1; round <= 4; round += 1) {
      await writeFile(log, `round ${round}\n`.repeat(20));
      expect(await rotateLogIfLarge(log, { maxBytes: 100, keep: 2 })).toBe(true);
    }
    expect(await readFile(log, "utf8")).toBe("");
    expect(await readFile(`${log}.1`, "utf8")).toContain("round 4");
    expect(await readFile(`${log}.2`, "utf8")).toContain("round 3");
    await expect(readFile(`${log}.3`, "utf8")).rejects.toThrow();
  });

  it("leaves a small log alone", async () => {
    await writeFile(log, "short\n");
    expect(await rotateLogIfLarge(log, { maxBytes: 100, keep: 2 })).toBe(false);
  });

  it("reads the last lines, reaching into the rotated file when the live one is short", async () => {
    await writeFile(`${log}.1`, "a\nb\nc\n");
    await writeFile(log, "d\n");
    await appendFile(log, "e\n");
    expect(await readLogTail(log, 3)).toEqual(["c", "d", "e"]);
    expect(await readLogTail(log, 1)).toEqual(["e"]);
    expect(await readLogTail(path.join(directory, "absent.log"), 5)).toEqual([]);
  });
});
