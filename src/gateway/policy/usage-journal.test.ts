import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { UsageIncrement } from "../../protocol/gateway-keys-feed.js";
import { UsageLedger } from "./usage-ledger.js";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { processIsRunning, UsageJournal } from "./usage-journal.js";

const root = mkdtempSync(path.join(tmpdir(), "llmgw-usage-journal-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const usage = { errors: 0, promptTokens: 11, completionTokens: 7 };

describe("the usage journal", () => {
  // write leaves the sync to the kernel: what a crash of the process must not lose is in the file all the same.
  it.each(["disk", "write"] as const)("has a request's usage in its file when count's promise settles (sync: %s), and removes it once the store has the batch", async (sync) => {
    const directory = path.join(root, `one-${sync}`);
    const written: UsageIncrement[] = [];
    const ledger = new UsageLedger(async (increments) => void written.push(...increments), Date.now, UsageJournal.open(directory, { sync }));
    await Promise.all([ledger.count("k", "m", usage), ledger.count("k", "m", usage)]);
    const [segment] = readdirSync(directory);
    expect(readFileSync(path.join(directory, segment as string), "utf8").trim().split("\n")).toHaveLength(2);
    await ledger.flush();
    expect(written).toEqual([expect.objectContaining({ key: "k", model: "m", requests: 2, promptTokens: 22, completionTokens: 14 })]);
    // The sealed segment went with its batch; the new one is empty, and goes at close.
    await ledger.close();
    expect(readdirSync(directory)).toEqual([]);
  });

  // A full disk must not hold answers: the usage is still counted in memory, and the failure is said.
  it.each(["disk", "write"] as const)("settles a request's promise and reports the error when its write fails (sync: %s)", async (sync) => {
    const directory = path.join(root, `full-${sync}`);
    const errors: unknown[] = [];
    const journal = UsageJournal.open(directory, { sync, onError: (error) => errors.push(error) });
    // The next segment is named after the first: made a link to /dev/full, every write to it fails with ENOSPC.
    const [first] = readdirSync(directory);
    symlinkSync("/dev/full", path.join(directory, (first as string).replace(/1\.jsonl$/, "2.jsonl")));
    journal.seal();
    await journal.append({ key: "k", model: "m", minute: "2026-12-04T10:00Z", ...usage });
    expect(errors).toEqual([expect.objectContaining({ code: "ENOSPC" })]);
  });

  it("adopts what a dead process left, once, skipping a torn last line, and keeps it when the store refuses", async () => {
    const directory = path.join(root, "two");
    const journal = UsageJournal.open(directory, { isRunning: (pid) => pid === process.pid });
    writeFileSync(path.join(directory, "usage-999999-1-1.jsonl"), `${JSON.stringify(["k", "m", "2026-12-02T03:30Z", 1, 5, 6])}\n["k","m","2026-12-02T03:3`);
    let refuse = true;
    const written: UsageIncrement[] = [];
    const ledger = new UsageLedger(async (increments) => {
      if (refuse) throw new Error("store down");
      written.push(...increments);
    }, Date.now, journal);
    await expect(ledger.flush()).rejects.toThrow("store down");
    // Refused: the adopted segment is still on disk, under this process's name.
    expect(readdirSync(directory).some((name) => name.startsWith(`usage-${process.pid}-`) && name.endsWith("-a1.jsonl"))).toBe(true);
    refuse = false;
    await ledger.flush();
    expect(written).toEqual([expect.objectContaining({ minute: "2026-12-02T03:30Z", requests: 1, errors: 1, promptTokens: 5, completionTokens: 6 })]);
    await ledger.close();
    expect(readdirSync(directory)).toEqual([]);
  });

  // Linux only: elsewhere there is no /proc to tell a zombie by.
  it.runIf(existsSync("/proc/self/stat"))("counts a dead process not yet reaped (a zombie) as gone, and itself as running", () => {
    expect(processIsRunning(process.pid)).toBe(true);
    const child = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
    const pid = child.pid as number;
    // Blocking the event loop keeps node from reaping the child: it stays a zombie until this test returns.
    const until = Date.now() + 20_000;
    const zombie = () => existsSync(`/proc/${pid}/stat`) && readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.startsWith("Z") === true;
    while (!zombie() && Date.now() < until);
    expect(zombie()).toBe(true);
    expect(processIsRunning(pid)).toBe(false);
  });
});
