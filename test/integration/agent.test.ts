import { chmod, mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import { request } from "undici";
import net from "node:net";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { FakeControlPlane } from "../support/fake-control-plane.js";
import { killGroup, standInDriverFor, waitFor, writeFakeEngine } from "../support/fake-engine.js";
import { heartbeatDelayMs, startAgent, type AgentOptions, type RunningAgent } from "../../src/agent/agent.js";
import { isProcessAlive } from "../../src/agent/engine-process.js";

let directory: string;
let engineScript: string;
let controlPlane: FakeControlPlane;
const agents: RunningAgent[] = [];

beforeEach(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), "llmgw-agent-"));
  engineScript = await writeFakeEngine(directory);
  controlPlane = new FakeControlPlane();
  await controlPlane.start();
});

afterEach(async () => {
  for (const agent of agents.splice(0)) {
    const groups = agent.supervisor.persisted().map((record) => record.process_group);
    await agent.close();
    for (const group of groups) killGroup(group);
  }
  await controlPlane.stop();
  await rm(directory, { recursive: true, force: true });
});

async function agent(overrides: Partial<AgentOptions> = {}): Promise<RunningAgent> {
  const running = await startAgent({
    server: controlPlane.url,
    joinToken: controlPlane.joinToken,
    name: "node-a",
    dataDirectory: path.join(directory, "data"),
    simulate: "2xH100-80GB@nvl0,cpu:8c/32g",
    driverFor: standInDriverFor("vllm", []),
    llmgwCommand: [process.execPath, engineScript],
    healthPollMs: 100,
    stopGraceMs: 2000,
    logger: pino({ level: "silent" }),
    ...overrides,
  });
  agents.push(running);
  return running;
}

const replica = { id: "r1", model: "tiny", profile: "default", engine: "vllm" as const, source: "hf://org/tiny@main", cards: [1] };

describe("the agent joining and reporting", () => {
  it("joins with its token, reports simulated cards and every engine, and heartbeats with its credential", async () => {
    const running = await agent({ labels: { zone: "a" } });
    expect(controlPlane.joins).toHaveLength(1);
    const join = controlPlane.joins[0];
    expect(join).toMatchObject({ protocol: 1, name: "node-a", address: running.url, fabric: "node-a", labels: { zone: "a" } });
    expect(join?.inventory).toMatchObject({
      cpu_cores: 8,
      memory_bytes: 32 * 1024 ** 3,
      simulated: true,
      engines: ["vllm", "sglang", "trtllm", "llamacpp", "comfyui"],
      gpus: [
        { index: 0, class: "h100", memory_bytes: 80 * 1024 ** 3, fabric: "nvl0" },
        { index: 1, class: "h100", fabric: "nvl0" },
      ],
    });
    expect(join?.inventory.disk_free_bytes).toBeGreaterThan(0);
    await waitFor(() => controlPlane.heartbeats.length >= 2, 10_000, "two heartbeats");
    expect(controlPlane.heartbeats[0]).toMatchObject({ protocol: 1, name: "node-a", replicas: [] });
  });

  it("refuses a wrong join token, saying how to get one", async () => {
    await expect(agent({ joinToken: "wrong" })).rejects.toThrow(/refused agent node-a's join: unknown join token/);
  });

  it("stops with a message naming both versions when the server speaks another protocol", async () => {
    controlPlane.speaks = 2;
    await expect(agent()).rejects.toMatchObject({
      code: "version_unsupported",
      message: "this server speaks agent protocol 2; the agent sent protocol 1",
    });
  });

  it("refuses calls without the node credential, and messages of another protocol version", async () => {
    const running = await agent();
    const anonymous = await request(`${running.url}/agent/v1/replicas`);
    expect(anonymous.statusCode).toBe(401);
    expect(await anonymous.body.json()).toMatchObject({ error: { code: "unauthorized" } });
    const future = await controlPlane.call("node-a", "POST", "/agent/v1/replicas", { protocol: 2, replica });
    // The admin API's status for the code: one table for both.
    expect(future.status).toBe(426);
    expect(future.body).toMatchObject({ error: { code: "version_unsupported", message: "agent node-a: this agent speaks agent protocol 1; the server sent protocol 2" } });
  });

  it("retries a server that went away within the server's heartbeat deadline, however many beats failed", async () => {
    // 15 s: the server's default heartbeat deadline, shorter than its settling window after a restart.
    const serverHeartbeatDeadlineMs = 15_000;
    const waits = Array.from({ length: 40 }, (_unused, failures) => heartbeatDelayMs(failures, 2000, () => 1));
    expect(Math.max(...waits)).toBeLessThan(serverHeartbeatDeadlineMs / 2);
    expect(waits[1]).toBeGreaterThan(waits[0] ?? 0);
  });

  it("listens on a bare port, and names --listen when it is not HOST:PORT", async () => {
    expect((await agent({ listen: "0" })).url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    await expect(agent({ listen: "localhost" })).rejects.toMatchObject({ code: "config_invalid", message: '--listen: "localhost" is not HOST:PORT' });
  });

  it("names --listen when its port is taken, and leaves no background task running", async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const port = (taken.address() as net.AddressInfo).port;
    // Only intervals are faked: they are what the agent's background tasks use, and counting them is exact.
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    try {
      const failure = agent({ listen: `127.0.0.1:${port}` });
      await expect(failure).rejects.toMatchObject({
        code: "config_invalid",
        message: `cannot listen on 127.0.0.1:${port}: another process already listens there`,
        hint: expect.stringContaining("--listen"),
      });
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
      await new Promise<void>((resolve) => taken.close(() => resolve()));
    }
  });

  it("needs neither a token nor a join on restart: the credential is kept", async () => {
    const first = await agent();
    await first.close();
    const second = await agent({ joinToken: undefined });
    await second.heartbeatNow();
    expect(controlPlane.joins).toHaveLength(1);
    expect(controlPlane.lastHeartbeat("node-a")?.address).toBe(second.url);
    const state = JSON.parse(await readFile(path.join(directory, "data", "agent-state.json"), "utf8")) as { credential: string };
    expect(state.credential).toBe(controlPlane.credentials.get("node-a"));
    expect((await stat(path.join(directory, "data", "agent-state.json"))).mode & 0o777).toBe(0o600);
  });
});

describe("the agent's secrets at rest", () => {
  const listReplicas = async (running: RunningAgent, secret: string | undefined) =>
    (await request(`${running.url}/agent/v1/replicas`, { headers: secret === undefined ? {} : { authorization: `Bearer ${secret}` } })).statusCode;
  const readState = async () =>
    JSON.parse(await readFile(path.join(directory, "data", "agent-state.json"), "utf8")) as { credential: string; control_secret_hash?: string };

  it("obeys only the server's control secret, of which it keeps only the hash: not its own credential, nor the hash itself", async () => {
    const running = await agent();
    const controlSecret = controlPlane.controlSecrets.get("node-a") as string;
    const state = await readState();
    expect(JSON.stringify(state)).not.toContain(controlSecret);
    expect(state.control_secret_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(await listReplicas(running, undefined)).toBe(401);
    expect(await listReplicas(running, state.credential)).toBe(401);
    expect(await listReplicas(running, state.control_secret_hash)).toBe(401);
    expect(await listReplicas(running, controlSecret)).toBe(200);
  });

  it("learns a new control secret from a heartbeat answer, and refuses the old one from then on", async () => {
    const running = await agent();
    const old = controlPlane.controlSecrets.get("node-a") as string;
    const renewed = controlPlane.rotateControlSecret("node-a");
    await running.heartbeatNow();
    expect(await listReplicas(running, renewed)).toBe(200);
    expect(await listReplicas(running, old)).toBe(401);
  });

  it("accepts its credential from a server that gives no control secret (an older release)", async () => {
    controlPlane.givesControlSecrets = false;
    const running = await agent();
    expect(await listReplicas(running, controlPlane.credentials.get("node-a"))).toBe(200);
    expect(await listReplicas(running, "llmgw_node_other")).toBe(401);
  });

  it("creates its data directory 0700 and its state file 0600", async () => {
    await agent();
    expect((await stat(path.join(directory, "data"))).mode & 0o777).toBe(0o700);
    expect((await stat(path.join(directory, "data", "agent-state.json"))).mode & 0o777).toBe(0o600);
  });

  it("says so at start, with the chmod to run, when its existing data directory is open to others, and leaves it as it is", async () => {
    const data = path.join(directory, "data");
    await mkdir(data, { mode: 0o755 });
    await chmod(data, 0o755);
    const running = await agent();
    expect(running.warnings).toEqual([expect.stringContaining(`(mode 0755), and it holds secrets; close it with: chmod 700 ${data}`)]);
    expect((await stat(data)).mode & 0o777).toBe(0o755);
  });
});

describe("replicas on command", () => {
  it("runs the simulated engine with the driver's arguments, reports it ready, serves its log, and stops it", async () => {
    await agent({ terminalRetentionMs: 0 });
    const started = await controlPlane.startReplica("node-a", { ...replica, simulation: { weights_bytes_per_card: 1000 } });
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ protocol: 1, replica: { id: "r1", state: "fetching" } });
    const ready = await waitFor(() => {
      const status = controlPlane.lastReplica("node-a", "r1");
      return status?.state === "ready" ? status : undefined;
    }, 20_000, "r1 ready in a heartbeat");
    expect(ready).toMatchObject({ engine: "vllm", cards: [1], endpoint: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/), pid: expect.any(Number) });

    const log = await controlPlane.call("node-a", "GET", "/agent/v1/replicas/r1/logs?tail=5");
    expect(log.text).toContain("args=sim-engine --engine vllm -- --port");
    expect(log.text).toContain("CUDA_VISIBLE_DEVICES=1 LLMGW_SIM_GPU_CLASS=h100");

    const stopped = await controlPlane.call("node-a", "DELETE", "/agent/v1/replicas/r1");
    expect(stopped).toMatchObject({ status: 202, body: { replica: { state: "draining" } } });
    await waitFor(() => controlPlane.sawReplica("node-a", "r1", "stopped"), 10_000, "r1 stopped in a heartbeat");
    expect(await isProcessAlive(ready.pid ?? 0)).toBe(false);
    // Reported once, then forgotten by the agent; its log stays.
    await waitFor(async () => ((await controlPlane.call("node-a", "GET", "/agent/v1/replicas")).body as { replicas: unknown[] }).replicas.length === 0, 10_000, "r1 forgotten");
    expect((await controlPlane.call("node-a", "GET", "/agent/v1/replicas/r1/logs?tail=1")).text).toContain("SIGTERM received");
  });

  it("streams the log with follow until the replica ends", async () => {
    await agent();
    await controlPlane.startReplica("node-a", replica);
    await waitFor(() => controlPlane.lastReplica("node-a", "r1")?.state === "ready", 20_000, "r1 ready");
    const address = controlPlane.addresses.get("node-a") ?? "";
    const follow = await request(`${address}/agent/v1/replicas/r1/logs?tail=1&follow=1`, { headers: { authorization: `Bearer ${controlPlane.controlSecrets.get("node-a")}` } });
    expect(follow.headers["content-type"]).toContain("text/plain");
    const received: string[] = [];
    const reading = (async () => {
      for await (const chunk of follow.body) received.push(String(chunk));
    })();
    await waitFor(() => received.join("").includes("ready"), 5000, "the tail");
    await controlPlane.call("node-a", "DELETE", "/agent/v1/replicas/r1");
    await reading;
    expect(received.join("")).toContain("SIGTERM received, exiting");
  });

  it("keeps replicas running while the server is unreachable, and reports again when it returns", async () => {
    const running = await agent();
    await controlPlane.startReplica("node-a", replica);
    const ready = await waitFor(() => {
      const status = controlPlane.lastReplica("node-a", "r1");
      return status?.state === "ready" ? status : undefined;
    }, 20_000, "r1 ready");
    const port = controlPlane.port;
    await controlPlane.stop();
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await isProcessAlive(ready.pid ?? 0)).toBe(true);
    expect(running.supervisor.get("r1")?.state).toBe("ready");
    const beatsBefore = controlPlane.heartbeats.length;
    await controlPlane.start(port);
    await waitFor(() => controlPlane.heartbeats.length > beatsBefore, 20_000, "a heartbeat after the outage");
    expect(controlPlane.lastReplica("node-a", "r1")).toMatchObject({ state: "ready", pid: ready.pid });
  });

  it("fails a replica whose source is missing, naming it, and takes the id again after DELETE", async () => {
    await agent({ simulate: undefined, driverFor: standInDriverFor(process.execPath, [engineScript]) });
    const missing = path.join(directory, "no-such-model.gguf");
    await controlPlane.startReplica("node-a", { ...replica, source: missing });
    const failed = await waitFor(() => controlPlane.sawReplica("node-a", "r1", "failed"), 10_000, "r1 failed");
    expect(failed.reason).toContain(`local path ${missing} does not exist on node node-a`);
    const present = path.join(directory, "model.gguf");
    await writeFile(present, "x");
    // A failed replica is cleared by DELETE, after which the id can be used again.
    expect((await controlPlane.call("node-a", "DELETE", "/agent/v1/replicas/r1")).status).toBe(202);
    await controlPlane.startReplica("node-a", { ...replica, source: present });
    await waitFor(() => controlPlane.lastReplica("node-a", "r1")?.state === "ready", 20_000, "r1 ready after the fix");
  });
});
