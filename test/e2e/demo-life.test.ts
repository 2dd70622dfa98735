import { execFileSync } from "node:child_process";
import { readFileSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ReplicaView } from "../../src/protocol/views.js";
import { isProcessAlive } from "../../src/agent/engine-process.js";
import { startDemoProcess, stopDemo, type DemoProcess } from "../support/demo-process.js";
import { followInShell, pasteInShell, pathWithLlmgw } from "../support/paste-in-shell.js";
import { runCli } from "../support/processes.js";
import { temporaryDirectory } from "../support/temporary-directory.js";
import { waitFor } from "../support/fake-engine.js";

/** The agents' pids, from ps: the processes whose command line names this demo's agent folders. */
function agentPidsNow(dataDir: string): Map<string, number> {
  const pids = new Map<string, number>();
  for (const line of execFileSync("ps", ["-eo", "pid=,args="], { encoding: "utf8" }).split("\n")) {
    const match = new RegExp(`^\\s*(\\d+) .* agent .*--data-dir ${dataDir.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}/agents/(\\S+)`).exec(line);
    if (match) pids.set(match[2] as string, Number(match[1]));
  }
  return pids;
}

async function running(pids: readonly number[]): Promise<number[]> {
  const alive: number[] = [];
  for (const pid of pids) if (await isProcessAlive(pid)) alive.push(pid);
  return alive;
}

/**
 * One demo through its life: every printed line pasted in the printed order,
 * an agent killed and started again by the demo, and the demo itself killed
 * with SIGKILL, after which nothing it started may be left.
 */
describe("llmgw demo's life", () => {
  let demo: DemoProcess;
  let dataDir: string;
  const ctl = async (...args: string[]) => {
    const result = await runCli(["ctl", "--server", demo.url, "--token", demo.token, ...args]);
    if (result.code !== 0) throw new Error(`ctl ${args.join(" ")} failed: ${result.stderr}`);
    return result.stdout;
  };
  const replicas = async () => (JSON.parse(await ctl("replicas", "--json")) as { replicas: ReplicaView[] }).replicas;

  beforeAll(async () => {
    demo = await startDemoProcess();
    dataDir = path.dirname((/state in (\S+)\)/.exec(demo.output()) ?? [])[1] as string);
  }, 150_000);
  afterAll(() => stopDemo(demo), 40_000);

  it("makes its agents' folders private, so its own agents do not warn that they are open", async () => {
    for (const node of ["gpu-node-1", "gpu-node-2"]) expect(statSync(path.join(dataDir, "agents", node)).mode & 0o777).toBe(0o700);
    expect(readFileSync(path.join(dataDir, "agents", "gpu-node-1", "agent.log"), "utf8")).not.toMatch(/warning: .*(open|readable)/i);
  });

  it("runs every line it printed under 'Try', pasted in the printed order, each within a bound", async () => {
    const lines = demo.output().split("\n");
    const start = lines.indexOf("Try, in another terminal:");
    const commands = lines
      .slice(start + 1, lines.indexOf("", start))
      .filter((line) => line.startsWith("    "))
      .map((line) => line.trim());
    const [exportLine, ...rest] = commands;
    // The last line follows the events until Ctrl-C: watched until it shows what the lines above did, then stopped.
    const follow = rest.pop() as string;
    expect(follow).toBe("llmgw ctl events --follow");
    const searchPath = pathWithLlmgw();
    const elsewhere = temporaryDirectory("llmgw-demo-order-");
    // How long each line took, said with a failure: on a loaded machine the lines' sum is what runs out, not one line.
    const took: string[] = [];
    for (const command of rest) {
      // A line that does not finish fails here, naming itself (pasteInShell's bound), rather than at the test's timeout.
      const began = performance.now();
      const result = await pasteInShell(`${exportLine}\n${command}`, elsewhere, searchPath).catch((error: unknown) => {
        throw new Error(`${error instanceof Error ? error.message : String(error)}\nThe lines before it took: ${took.join("; ") || "none ran"}`);
      });
      took.push(`${command.slice(0, 60)} ${((performance.now() - began) / 1000).toFixed(1)} s`);
      expect(result.code, `${command}\n${result.stdout}\n${result.stderr}`).toBe(0);
      if (command.startsWith("llmgw ")) expect(result.stderr, command).toBe("");
      if (command.includes("model serve")) expect(result.stdout.trimEnd().split("\n").at(-1)).toBe("chat-14b is ready: 1 replica serving.");
      if (command.includes("/v1/images/generations")) expect(result.stdout).toContain('"b64_json"');
    }
    const events = await followInShell(`${exportLine}\n${follow}`, elsewhere, searchPath, /replica-ready/);
    expect(events).toContain("replica-ready");
  }, 600_000);

  it("shows a model's one replica's log by the model's name, and lists a model's replicas when it has several", async () => {
    const log = await runCli(["ctl", "--server", demo.url, "--token", demo.token, "logs", "llama-3.1-8b", "--tail", "5"]);
    expect(log.code, log.stderr).toBe(0);
    expect(log.stdout.length).toBeGreaterThan(0);
    // Scaled to two by the printed lines.
    const several = await runCli(["ctl", "--server", demo.url, "--token", demo.token, "logs", "qwen2.5-7b-instruct"]);
    expect(several.code).toBe(1);
    const ids = (await replicas()).filter((replica) => replica.model === "qwen2.5-7b-instruct").map((replica) => replica.id);
    expect(ids).toHaveLength(2);
    for (const id of ids) expect(several.stderr).toContain(id);
  });

  it("says a key made on its open gateway is checked nowhere there", async () => {
    const created = await ctl("key", "create", "demo-app", "--rpm", "5");
    expect(created).toContain("Note: This server's gateway is open: it checks no key");
    expect(created).toContain("It was started open by the program that ran it (llmgw demo does)");
  });

  it("starts an agent that died again, and says so; its engines run on, adopted", async () => {
    const before = agentPidsNow(dataDir);
    const victim = before.get("gpu-node-1") as number;
    const enginesBefore = (await replicas()).filter((replica) => replica.node === "gpu-node-1").map((replica) => replica.pid);
    process.kill(victim, "SIGKILL");
    await waitFor(() => /agent of gpu-node-1 exited \(SIGKILL\); starting it again in 1 s/.test(demo.output()), 20_000, "the demo to say it restarts the agent");
    const after = await waitFor(async () => {
      const now = (agentPidsNow(dataDir)).get("gpu-node-1");
      return now !== undefined && now !== victim ? now : undefined;
    }, 30_000, "a new agent of gpu-node-1");
    expect(await running([victim])).toEqual([]);
    expect(await running([after])).toEqual([after]);
    // Adopted, not restarted: the same engines serve.
    const adopted = await waitFor(async () => {
      const mine = (await replicas()).filter((replica) => replica.node === "gpu-node-1");
      return mine.every((replica) => replica.adopted && replica.state === "ready") ? mine : undefined;
    }, 30_000, "the new agent to adopt gpu-node-1's engines");
    expect(adopted.map((replica) => replica.pid).sort()).toEqual(enginesBefore.sort());
  }, 90_000);

  it("leaves no agent and no engine running after kill -9 of the demo itself", async () => {
    const agents = [...(agentPidsNow(dataDir)).values()];
    const engines = (await replicas()).flatMap((replica) => (replica.pid !== null ? [replica.pid] : []));
    expect(agents).toHaveLength(2);
    expect(engines.length).toBeGreaterThan(5);
    expect(await running([...agents, ...engines])).toEqual([...agents, ...engines]);
    // The demo alone, not its group: what follows is the agents' own doing.
    process.kill(demo.process.pid as number, "SIGKILL");
    await demo.exited;
    const left = await waitFor(async () => {
      const alive = await running([...agents, ...engines]);
      return alive.length === 0 ? alive : undefined;
    }, 60_000, "the agents and engines to go after the demo's kill -9");
    expect(left).toEqual([]);
    // Nothing could remove the folder of a demo killed so; the test does.
    rmSync(dataDir, { recursive: true, force: true });
  }, 90_000);
});

describe("a pasted line that never finishes", () => {
  it("is killed with everything it started, and fails naming the line and what it printed", async () => {
    const folder = temporaryDirectory("llmgw-paste-bound-");
    const line = `sleep 300 & echo "$!" > started.pid; echo waiting; sleep 300`;
    await expect(pasteInShell(`export A=1\n${line}`, folder, pathWithLlmgw(), 1000)).rejects.toThrow(
      new RegExp(`the pasted line \`${line.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\`\\n  did not finish within 1 s; killed with its process group\\. It printed:\\nwaiting`),
    );
    const background = Number(readFileSync(path.join(folder, "started.pid"), "utf8"));
    await waitFor(async () => !(await isProcessAlive(background)), 10_000, "the line's background sleep to be killed with it");
  });
});
