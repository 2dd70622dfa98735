import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { request } from "undici";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FakeControlPlane } from "../support/fake-control-plane.js";
import { killGroup, waitFor, writeFakeEngine } from "../support/fake-engine.js";
import { isProcessAlive } from "../../src/agent/engine-process.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const loader = path.join(root, "test/support/typescript-loader.mjs");
const entry = path.join(root, "test/support/agent-process.ts");

let directory: string;
let engineScript: string;
let controlPlane: FakeControlPlane;
const children: ChildProcess[] = [];
const engineGroups: number[] = [];

interface AgentChild {
  readonly child: ChildProcess;
  readonly output: () => string;
  readonly exited: Promise<number | null>;
}

function startAgentProcess(extra: string[]): AgentChild {
  const child = spawn(
    process.execPath,
    ["--import", loader, entry, "agent", "--server", controlPlane.url, "--name", "node-a", "--data-dir", path.join(directory, "data"), "--simulate", "2xL40S", "--stop-grace", "2", ...extra],
    // Its own group, so the test can kill it (and only it) whatever it started.
    { detached: true, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, FAKE_ENGINE_SCRIPT: engineScript } },
  );
  children.push(child);
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, output: () => output, exited };
}

beforeEach(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), "llmgw-adoption-"));
  engineScript = await writeFakeEngine(directory);
  controlPlane = new FakeControlPlane();
  await controlPlane.start();
});

afterEach(async () => {
  for (const child of children.splice(0)) killGroup(child.pid);
  for (const group of engineGroups.splice(0)) killGroup(group);
  await controlPlane.stop();
  await rm(directory, { recursive: true, force: true });
});

/** An agent with replica `id` ready on `card`, then killed with SIGKILL: its engine runs on. */
async function engineLeftRunning(id: string, card: number): Promise<{ pid: number; endpoint: string }> {
  const first = startAgentProcess(["--token", controlPlane.joinToken]);
  await waitFor(() => controlPlane.joins.length === 1, 30_000, `the agent to join:\n${first.output()}`);
  await controlPlane.startReplica("node-a", { id, model: "tiny", profile: "default", engine: "vllm", source: "hf://org/tiny@main", cards: [card] });
  const ready = await waitFor(() => {
    const status = controlPlane.lastReplica("node-a", id);
    return status?.state === "ready" ? status : undefined;
  }, 30_000, `${id} ready`);
  engineGroups.push(ready.pid as number);
  first.child.kill("SIGKILL");
  await first.exited;
  return { pid: ready.pid as number, endpoint: ready.endpoint as string };
}

describe("an agent killed with SIGKILL and started again", () => {
  it("adopts its running engine: same pid, still serving, nothing restarted, no join token needed", async () => {
    const first = startAgentProcess(["--token", controlPlane.joinToken]);
    await waitFor(() => controlPlane.joins.length === 1, 30_000, `the agent to join:\n${first.output()}`);
    const started = await controlPlane.startReplica("node-a", { id: "r1", model: "tiny", profile: "default", engine: "vllm", source: "hf://org/tiny@main", cards: [0] });
    expect(started.status).toBe(202);
    const ready = await waitFor(() => {
      const status = controlPlane.lastReplica("node-a", "r1");
      return status?.state === "ready" ? status : undefined;
    }, 30_000, "r1 ready");
    const pid = ready.pid as number;
    engineGroups.push(pid);

    first.child.kill("SIGKILL");
    await first.exited;
    // The engine outlives its agent and keeps serving.
    expect(await isProcessAlive(pid)).toBe(true);
    expect(await (await request(`${ready.endpoint}/pid`)).body.text()).toBe(String(pid));

    const beatsBefore = controlPlane.heartbeats.length;
    const second = startAgentProcess([]);
    const adopted = await waitFor(() => {
      const beat = controlPlane.heartbeats.slice(beatsBefore).find((candidate) => candidate.replicas.some((replica) => replica.id === "r1"));
      return beat?.replicas.find((replica) => replica.id === "r1");
    }, 30_000, `a heartbeat from the restarted agent:\n${second.output()}`);
    expect(adopted).toMatchObject({ state: "ready", pid, endpoint: ready.endpoint, adopted: true });
    expect(controlPlane.joins).toHaveLength(1);
    const log = await readFile(path.join(directory, "data", "logs", "r1.log"), "utf8");
    expect(log.match(/fake engine pid/g)).toHaveLength(1);

    // The adopted engine is the new agent's to stop.
    await controlPlane.call("node-a", "DELETE", "/agent/v1/replicas/r1");
    await waitFor(() => controlPlane.sawReplica("node-a", "r1", "stopped"), 15_000, "r1 stopped");
    expect(await isProcessAlive(pid)).toBe(false);

    second.child.kill("SIGTERM");
    expect(await second.exited).toBe(0);
  });

  it("reports an engine that died while no agent ran as failed, with its log tail", async () => {
    const ready = await engineLeftRunning("r2", 1);
    killGroup(ready.pid);
    await waitFor(async () => !(await isProcessAlive(ready.pid)), 5000, "the engine to die");

    startAgentProcess([]);
    const failed = await waitFor(() => controlPlane.sawReplica("node-a", "r2", "failed"), 30_000, "r2 failed");
    expect(failed.reason).toContain(`(pid ${ready.pid}) was no longer running when the agent restarted`);
    expect(failed.reason).toContain("fake engine pid");
    // Nothing was there to adopt.
    expect(failed.adopted).toBeUndefined();
  });

  it("adopts its engine when its state file was lost: it finds the engine by its marker and reports it, never leaves it unseen", async () => {
    const { pid, endpoint } = await engineLeftRunning("r3", 0);
    await rm(path.join(directory, "data", "agent-state.json"));
    const beatsBefore = controlPlane.heartbeats.length;
    // Without its state file it has no credential either: it joins again with its token.
    const second = startAgentProcess(["--token", controlPlane.joinToken]);
    const adopted = await waitFor(
      () => controlPlane.heartbeats.slice(beatsBefore).flatMap((beat) => beat.replicas).find((replica) => replica.id === "r3"),
      30_000,
      `a heartbeat with r3 from the restarted agent:\n${second.output()}`,
    );
    expect(adopted).toMatchObject({ state: "ready", pid, endpoint, adopted: true, cards: [0] });
    expect(controlPlane.joins).toHaveLength(2);
    expect(await isProcessAlive(pid)).toBe(true);
  });

  it("stops its engine when its whole folder was wiped, reporting it draining on its card until the process is gone", async () => {
    const { pid } = await engineLeftRunning("r3", 0);
    await rm(path.join(directory, "data"), { recursive: true, force: true });
    const beatsBefore = controlPlane.heartbeats.length;
    const second = startAgentProcess(["--token", controlPlane.joinToken]);
    const reports = () => controlPlane.heartbeats.slice(beatsBefore).flatMap((beat) => beat.replicas).filter((replica) => replica.id === "r3");
    // The first heartbeat already says what holds card 0, so nothing is placed there meanwhile.
    const first = await waitFor(() => reports()[0], 30_000, `a heartbeat with r3 from the restarted agent:\n${second.output()}`);
    expect(first).toMatchObject({ state: "draining", cards: [0], model: "tiny" });
    expect(first.adopted).toBeUndefined();
    await waitFor(() => reports().find((replica) => replica.state === "stopped"), 30_000, "r3 stopped");
    // Reported stopped only once the process is gone.
    expect(await isProcessAlive(pid)).toBe(false);
  });

  it("exits non-zero with the server's message when the join token is wrong", async () => {
    const agent = startAgentProcess(["--token", "not-the-token"]);
    expect(await agent.exited).toBe(1);
    expect(agent.output()).toContain("refused agent node-a's join: unknown join token");
  });
});
