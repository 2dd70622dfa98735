import { writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCli } from "../support/processes.js";
import { temporaryDirectory } from "../support/temporary-directory.js";

const aliasBomb = [
  "name: bomb",
  "owner: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]",
  "fallbacks: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]",
  "",
].join("\n");

describe("hostile YAML given to the CLI and to the server, as real processes", () => {
  const directory = temporaryDirectory("llmgw-hostile-");
  afterAll(async () => rm(directory, { recursive: true, force: true }));
  const write = (name: string, text: string) => {
    const file = path.join(directory, name);
    writeFileSync(file, text);
    return file;
  };
  const expectCleanRefusal = (result: { code: number; stderr: string }, message: string) => {
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(message);
    expect(result.stderr).not.toContain("This is a bug in llmgw");
    expect(result.stderr).not.toMatch(/\n\s+at /);
  };

  it("ctl model add -f prints an alias bomb's place, not a stack trace", async () => {
    // Refused while reading the file, before any server is called.
    const result = await runCli(["ctl", "--server", "http://127.0.0.1:9", "--token", "unused", "model", "add", "-f", write("bomb.yaml", aliasBomb)]);
    expectCleanRefusal(result, "bomb.yaml:3:16: YAML aliases (*a) are not accepted");
  });

  it("ctl model add -f prints an alias without an anchor cleanly", async () => {
    const result = await runCli(["ctl", "--server", "http://127.0.0.1:9", "--token", "unused", "model", "add", "-f", write("orphan.yaml", "name: m\nowner: *nobody\n")]);
    expectCleanRefusal(result, "orphan.yaml:2:8: YAML aliases (*nobody) are not accepted");
  });

  it("llmgw server refuses an alias bomb in server.yaml with its place and does not start", async () => {
    const config = write("server.yaml", `listen: 127.0.0.1:0\nmodels:\n  - name: a\n    owner: &x team\n    fallbacks: [*x, *x]\n`);
    const result = await runCli(["server", "-c", config, "--data-dir", path.join(directory, "data")]);
    expectCleanRefusal(result, "server.yaml:5:17: YAML aliases (*x) are not accepted");
  });

  it("ctl model add -f lists 20 of 30,000 unknown keys and counts the rest", async () => {
    const keys = Array.from({ length: 30_000 }, (_, index) => `unknown_${index}: ${index}`).join("\n");
    const result = await runCli(["ctl", "--server", "http://127.0.0.1:9", "--token", "unused", "model", "add", "-f", write("keys.yaml", `name: m\n${keys}\n`)]);
    expectCleanRefusal(result, "and 29980 more problems not listed");
    expect(result.stderr.length).toBeLessThan(20_000);
  });
});
