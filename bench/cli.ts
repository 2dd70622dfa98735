/**
 * `npm run bench -- cli`: how long a person waits for a ctl command, measured
 * beside node itself starting (`node -e 0`), each the median of several runs
 * one after the other: `llmgw ctl models` against a running server (with an
 * empty catalog: the time is the CLI's start and one request), and
 * `llmgw --help`, through bin/llmgw.js as an installed llmgw runs. npx adds
 * its own start on top (it resolves the package before running it), which is
 * why the docs say to `npm link` a clone.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { packageRoot } from "../src/package-root.js";
import { freePort } from "./admin-api.js";

const bin = path.join(packageRoot.directory, "bin", "llmgw.js");
const runs = 15;

export interface CliBenchResult {
  readonly runs: number;
  /** Medians, in milliseconds. */
  readonly node_ms: number;
  readonly help_ms: number;
  readonly ctl_models_ms: number;
  readonly markdown: string;
}

function medianMs(args: readonly string[]): number {
  const times: number[] = [];
  for (let run = 0; run < runs; run += 1) {
    const started = performance.now();
    const result = spawnSync(process.execPath, args, { stdio: ["ignore", "ignore", "pipe"] });
    times.push(performance.now() - started);
    if (result.status !== 0) throw new Error(`node ${args.join(" ")} failed: ${result.stderr.toString()}`);
  }
  times.sort((a, b) => a - b);
  return Math.round(times[Math.floor(times.length / 2)] as number);
}

export async function cliBench(): Promise<CliBenchResult> {
  const dataDir = mkdtempSync(path.join(tmpdir(), "llmgw-bench-cli-"));
  const port = await freePort();
  const server = spawn(process.execPath, [bin, "server", "--listen", `127.0.0.1:${port}`, "--data-dir", dataDir], { stdio: "ignore" });
  try {
    const url = `http://127.0.0.1:${port}`;
    let token = "";
    for (let waited = 0; token === "" && waited < 60_000; waited += 250) {
      await sleep(250);
      token = (() => {
        try {
          return readFileSync(path.join(dataDir, "admin-token"), "utf8").trim();
        } catch {
          return "";
        }
      })();
    }
    if (token === "") throw new Error("the server wrote no admin token in 60 s");
    // Until it answers: the first ctl call must not measure the server's own start.
    for (let tries = 0; spawnSync(process.execPath, [bin, "ctl", "--server", url, "--token", token, "models"]).status !== 0; tries += 1) {
      if (tries > 100) throw new Error("the server did not answer ctl models");
      await sleep(250);
    }
    const node = medianMs(["-e", "0"]);
    const help = medianMs([bin, "--help"]);
    const models = medianMs([bin, "ctl", "--server", url, "--token", token, "models"]);
    const markdown = [
      "## CLI start",
      "",
      `Median of ${runs} runs each, one after the other, through bin/llmgw.js (npx adds its own start on top).`,
      "",
      "| command | median |",
      "| --- | --- |",
      `| \`node -e 0\` | ${node} ms |`,
      `| \`llmgw --help\` | ${help} ms |`,
      `| \`llmgw ctl models\` (a running server, empty catalog) | ${models} ms |`,
    ].join("\n");
    return { runs, node_ms: node, help_ms: help, ctl_models_ms: models, markdown };
  } finally {
    server.kill("SIGTERM");
    await new Promise((resolve) => server.once("exit", resolve));
    rmSync(dataDir, { recursive: true, force: true });
  }
}
