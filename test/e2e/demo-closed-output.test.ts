import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { ReplicaView } from "../../src/protocol/views.js";
import { isProcessAlive } from "../../src/agent/engine-process.js";
import { startDemoProcess, stopDemo } from "../support/demo-process.js";
import { runCli } from "../support/processes.js";
import { waitFor } from "../support/fake-engine.js";

/** Every process whose command line names the demo's folder: its agents, and anything they started there. */
function processesNaming(dataDir: string): string[] {
  return execFileSync("ps", ["-eo", "pid=,args="], { encoding: "utf8" })
    .split("\n")
    .filter((line) => line.includes(dataDir));
}

async function running(pids: readonly number[]): Promise<number[]> {
  const alive: number[] = [];
  for (const pid of pids) if (await isProcessAlive(pid)) alive.push(pid);
  return alive;
}

/**
 * `llmgw demo | tee demo.out`, then Ctrl-C: the whole foreground group gets
 * the signal, tee dies with it, and the demo's output is a closed pipe while
 * it stops. A terminal closed under the demo is the same with SIGHUP. Its
 * shutdown must not depend on being able to say so.
 */
describe.each(["SIGINT", "SIGHUP"] as const)("llmgw demo whose output is gone, then %s", (signal) => {
  it("stops every engine and agent it started and removes its folder", async () => {
    const demo = await startDemoProcess();
    try {
      const dataDir = path.dirname((/state in (\S+)\)/.exec(demo.output()) ?? [])[1] as string);
      const listed = await runCli(["ctl", "--server", demo.url, "--token", demo.token, "replicas", "--json"]);
      const engines = (JSON.parse(listed.stdout) as { replicas: ReplicaView[] }).replicas.flatMap((replica) => (replica.pid !== null ? [replica.pid] : []));
      expect(engines.length).toBeGreaterThan(0);
      expect(processesNaming(dataDir).length).toBeGreaterThan(0);

      // The reader of its output exits: every write the demo makes from here on fails with EPIPE.
      demo.process.stdout?.destroy();
      demo.process.stderr?.destroy();
      process.kill(-(demo.process.pid as number), signal);

      expect(await demo.exited).toBe(0);
      const left = await waitFor(async () => ((await running(engines)).length === 0 && processesNaming(dataDir).length === 0 ? [] : undefined), 30_000, "the engines and agents to go").catch(
        async () => [...(await running(engines)).map(String), ...processesNaming(dataDir)],
      );
      expect(left).toEqual([]);
      expect(existsSync(dataDir)).toBe(false);
    } finally {
      await stopDemo(demo);
    }
  }, 240_000);
});
