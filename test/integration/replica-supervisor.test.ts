import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import http from "node:http";
import net from "node:net";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { request } from "undici";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { killGroup, standInDriverFor, waitFor, writeFakeEngine } from "../support/fake-engine.js";
import { isProcessAlive, isProcessGroupAlive } from "../../src/agent/engine-process.js";
import { findMarkedProcesses } from "../../src/agent/find-marked-processes.js";
import { replicaSpecSchema, type ReplicaSpecInput, type ReplicaStatus } from "../../src/protocol/agent-protocol.js";
import { ReplicaSupervisor } from "../../src/agent/replica-supervisor.js";
import { supervisorTestOptions } from "../support/supervisor-options.js";
import type { ReplicaSupervisorOptions } from "../../src/agent/replicas/supervisor-options.js";

let directory: string;
let weights: string;
let engineScript: string;
let supervisors: ReplicaSupervisor[] = [];
const extraCleanups: (() => Promise<void> | void)[] = [];

beforeEach(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), "llmgw-supervisor-"));
  weights = path.join(directory, "model.gguf");
  await writeFile(weights, "weights");
  engineScript = await writeFakeEngine(directory);
});

afterEach(async () => {
  for (const supervisor of supervisors) {
    await supervisor.close();
    for (const record of supervisor.persisted()) killGroup(record.process_group);
  }
  supervisors = [];
  for (const cleanup of extraCleanups.splice(0)) await cleanup();
  await rm(directory, { recursive: true, force: true });
});

function makeSupervisor(overrides: Partial<ReplicaSupervisorOptions> = {}): ReplicaSupervisor {
  const supervisor = new ReplicaSupervisor(supervisorTestOptions(directory, standInDriverFor(process.execPath, [engineScript]), overrides));
  supervisors.push(supervisor);
  return supervisor;
}

function spec(overrides: Partial<ReplicaSpecInput> = {}) {
  return replicaSpecSchema.parse({ id: "r1", model: "tiny", profile: "default", engine: "llamacpp", source: weights, cards: [0, 1], ...overrides });
}

async function until(supervisor: ReplicaSupervisor, id: string, states: string[]): Promise<ReplicaStatus> {
  return await waitFor(() => {
    const status = supervisor.get(id);
    return status && states.includes(status.state) ? status : undefined;
  }, 20_000, `replica ${id} to be ${states.join(" or ")}`);
}

describe("ReplicaSupervisor", () => {
  it("starts an engine on its cards, waits for health and reports ready with its endpoint", async () => {
    const supervisor = makeSupervisor();
    expect((await supervisor.start(spec())).state).toBe("fetching");
    const ready = await until(supervisor, "r1", ["ready", "failed"]);
    expect(ready).toMatchObject({ state: "ready", endpoint: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/), pid: expect.any(Number) });
    const answer = await request(`${ready.endpoint}/pid`);
    expect(await answer.body.text()).toBe(String(ready.pid));
    const log = await readFile(path.join(directory, "logs", "r1.log"), "utf8");
    expect(log).toContain("CUDA_VISIBLE_DEVICES=0,1");
    expect(log).toContain(`--weights ${weights}`);
  });

  it("fails an engine that exits while loading, with its exit code and log tail", async () => {
    const supervisor = makeSupervisor();
    await supervisor.start(spec({ env: { FAKE_ENGINE_MODE: "crash" } }));
    const failed = await until(supervisor, "r1", ["failed", "ready"]);
    expect(failed.state).toBe("failed");
    expect(failed.reason).toContain("engine llamacpp exited with code 3 while loading tiny on node node-a");
    expect(failed.reason).toContain("RuntimeError: CUDA out of memory while loading layer 31");
  });

  it("fails an engine whose health never answers within the deadline, and kills it", async () => {
    const supervisor = makeSupervisor({ startupTimeoutMs: 1500 });
    await supervisor.start(spec({ env: { FAKE_ENGINE_MODE: "never-healthy" } }));
    const pid = (await waitFor(() => supervisor.persisted()[0]?.pid, 10_000, "a pid")) as number;
    const failed = await until(supervisor, "r1", ["failed", "ready"]);
    expect(failed.reason).toMatch(/did not answer GET http:\/\/127\.0\.0\.1:\d+\/health within 2 s/);
    expect(failed.reason).toContain("fake engine pid");
    expect(await isProcessAlive(pid)).toBe(false);
  });

  it("stops with SIGTERM to the process group", async () => {
    const supervisor = makeSupervisor();
    await supervisor.start(spec());
    const ready = await until(supervisor, "r1", ["ready", "failed"]);
    expect(supervisor.stop("r1", false).state).toBe("draining");
    await until(supervisor, "r1", ["stopped"]);
    expect(await isProcessAlive(ready.pid ?? 0)).toBe(false);
    expect(await readFile(path.join(directory, "logs", "r1.log"), "utf8")).toContain("SIGTERM received, exiting");
  });

  it("kills an engine that ignores SIGTERM after the grace period, workers in its group included", async () => {
    const supervisor = makeSupervisor({ stopGraceMs: 700 });
    await supervisor.start(spec({ env: { FAKE_ENGINE_MODE: "ignore-term" } }));
    const ready = await until(supervisor, "r1", ["ready", "failed"]);
    const started = Date.now();
    supervisor.stop("r1", false);
    await until(supervisor, "r1", ["stopped"]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(650);
    expect(await isProcessGroupAlive(ready.pid ?? 0)).toBe(false);
    expect(await readFile(path.join(directory, "logs", "r1.log"), "utf8")).toContain("ignoring SIGTERM");
  });

  it("reports a ready engine's requests in flight from its metrics, for the server to scale on", async () => {
    const supervisor = makeSupervisor();
    await supervisor.start(spec());
    const ready = await until(supervisor, "r1", ["ready", "failed"]);
    expect(ready.load).toBeUndefined();
    const slow = request(`${ready.endpoint}/slow`).then(async (answer) => await answer.body.text());
    await new Promise((resolve) => setTimeout(resolve, 200));
    await supervisor.scrapeLoad();
    expect(supervisor.get("r1")?.load).toEqual({ running: 1, waiting: 0 });
    await slow;
    await supervisor.scrapeLoad();
    expect(supervisor.get("r1")?.load).toEqual({ running: 0, waiting: 0 });
  });

  it("drains: waits for the request in flight before stopping", async () => {
    const supervisor = makeSupervisor();
    await supervisor.start(spec());
    const ready = await until(supervisor, "r1", ["ready", "failed"]);
    const slow = request(`${ready.endpoint}/slow`).then(async (answer) => await answer.body.text());
    await new Promise((resolve) => setTimeout(resolve, 200));
    supervisor.stop("r1", true);
    expect(await slow).toBe("done");
    await until(supervisor, "r1", ["stopped"]);
  });

  it("fails a replica whose engine program is not installed, naming the engine and the node", async () => {
    const supervisor = makeSupervisor({ driverFor: standInDriverFor("llama-server-not-installed", []) });
    await supervisor.start(spec());
    const failed = await until(supervisor, "r1", ["failed", "ready"]);
    expect(failed.reason).toContain('engine llamacpp is not installed on node node-a: program "llama-server-not-installed" was not found on PATH');
  });

  it("fails a replica whose port is taken by another process", async () => {
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    extraCleanups.push(() => new Promise<void>((resolve) => blocker.close(() => resolve())));
    const port = (blocker.address() as AddressInfo).port;
    const supervisor = makeSupervisor();
    await supervisor.start(spec({ port }));
    const failed = await until(supervisor, "r1", ["failed", "ready"]);
    expect(failed.reason).toContain(`port ${port} on node node-a is already taken by another process`);
  });

  it("fails a replica whose source answers 404, naming the URL", async () => {
    const server = http.createServer((_request, response) => response.writeHead(404).end());
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    extraCleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const source = `http://127.0.0.1:${(server.address() as AddressInfo).port}/models/absent.gguf`;
    const supervisor = makeSupervisor();
    await supervisor.start(spec({ source }));
    const failed = await until(supervisor, "r1", ["failed", "ready"]);
    expect(failed.reason).toContain(`could not fetch ${source} on node node-a: the server answered 404`);
  });

  it("refuses to start a replica that is still stopping, saying to start it again once stopped", async () => {
    const supervisor = makeSupervisor({ stopGraceMs: 700 });
    await supervisor.start(spec({ env: { FAKE_ENGINE_MODE: "ignore-term" } }));
    await until(supervisor, "r1", ["ready", "failed"]);
    supervisor.stop("r1", false);
    await expect(supervisor.start(spec({ env: { FAKE_ENGINE_MODE: "ignore-term" } }))).rejects.toThrow(
      expect.objectContaining({ code: "replica_conflict", message: "replica r1 on node node-a is stopping; start it again when it has stopped" }),
    );
    await until(supervisor, "r1", ["stopped"]);
  });

  it("keeps the agent's join token and admin token out of the engine's environment", async () => {
    const saved = { join: process.env.LLMGW_JOIN_TOKEN, admin: process.env.LLMGW_TOKEN };
    process.env.LLMGW_JOIN_TOKEN = "llmgw_join_secret";
    process.env.LLMGW_TOKEN = "llmgw_admin_secret";
    extraCleanups.push(() => {
      for (const [name, value] of [["LLMGW_JOIN_TOKEN", saved.join], ["LLMGW_TOKEN", saved.admin]] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    });
    const supervisor = makeSupervisor();
    await supervisor.start(spec());
    await until(supervisor, "r1", ["ready", "failed"]);
    const log = await readFile(path.join(directory, "logs", "r1.log"), "utf8");
    expect(log).toContain("inherited LLMGW_JOIN_TOKEN=undefined LLMGW_TOKEN=undefined");
    expect(log).not.toContain("_secret");
  });

  it("masks secret flag values and URL passwords in the log's start line, while the engine gets them", async () => {
    const supervisor = makeSupervisor();
    const args = ["--api-key", "sk-live-123", "--hf-token=hf_abc", "--lora-source", "http://mirror:pw-789@127.0.0.1:1/lora/", "--tokenizer", "/models/tok", "--max-num-batched-tokens", "8192"];
    await supervisor.start(spec({ args }));
    await until(supervisor, "r1", ["ready", "failed"]);
    const log = await readFile(path.join(directory, "logs", "r1.log"), "utf8");
    const startLine = log.split("\n").find((line) => line.startsWith("--- ")) ?? "";
    expect(startLine).toContain("--api-key *** --hf-token=*** --lora-source http://mirror:***@127.0.0.1:1/lora/ --tokenizer /models/tok --max-num-batched-tokens 8192");
    expect(startLine).not.toMatch(/sk-live-123|hf_abc|pw-789/);
    // The fake engine prints its own argv: the real values reached it.
    expect(log).toContain("sk-live-123");
  });

  it("refuses a second replica on cards in use, and treats a repeated start as the same replica", async () => {
    const supervisor = makeSupervisor();
    await supervisor.start(spec());
    expect((await supervisor.start(spec())).id).toBe("r1");
    await expect(supervisor.start(spec({ id: "r2", cards: [1] }))).rejects.toThrow(/cards 1 on node node-a are used by replica r1/);
    await expect(supervisor.start(spec({ model: "other" }))).rejects.toThrow(/already runs on node node-a/);
    await until(supervisor, "r1", ["ready", "failed"]);
  });
});

describe("ReplicaSupervisor, the engines it finds by their marker", () => {
  async function readyThenClosed(overrides: Partial<ReplicaSpecInput> = {}): Promise<ReplicaStatus> {
    const first = makeSupervisor();
    await first.start(spec(overrides));
    const ready = await until(first, "r1", ["ready", "failed"]);
    expect(ready.state).toBe("ready");
    // The agent process goes; its engine stays, as after kill -9.
    await first.close();
    supervisors = supervisors.filter((supervisor) => supervisor !== first);
    extraCleanups.push(() => killGroup(ready.pid));
    return ready;
  }

  it("writes each engine's spec file beside its log, readable by the agent's user only, and removes it once the engine is stopped", async () => {
    const supervisor = makeSupervisor();
    await supervisor.start(spec());
    await until(supervisor, "r1", ["ready", "failed"]);
    const specFile = path.join(directory, "logs", "r1.spec.json");
    expect((await stat(specFile)).mode & 0o777).toBe(0o600);
    expect((await stat(path.join(directory, "logs", "r1.log"))).mode & 0o777).toBe(0o600);
    expect((await stat(path.join(directory, "logs"))).mode & 0o777).toBe(0o700);
    expect(JSON.parse(await readFile(specFile, "utf8"))).toMatchObject({ spec: { id: "r1", cards: [0, 1] }, port: expect.any(Number), launch_id: expect.any(String) });
    supervisor.stop("r1", false);
    await until(supervisor, "r1", ["stopped"]);
    await waitFor(async () => !(await stat(specFile).then(() => true, () => false)), 5000, "the spec file to go");
  });

  it("adopts an engine that no record names, from its marker and its spec file: same pid, ready, still serving", async () => {
    const ready = await readyThenClosed();
    const found = await findMarkedProcesses(directory);
    expect(found?.map((process) => process.pid)).toContain(ready.pid);
    const second = makeSupervisor();
    await second.adopt([], found ?? []);
    expect(second.get("r1")).toMatchObject({ state: "ready", pid: ready.pid, endpoint: ready.endpoint, adopted: true, cards: [0, 1] });
    expect(await (await request(`${ready.endpoint}/pid`)).body.text()).toBe(String(ready.pid));
    // Adopted means its to stop.
    second.stop("r1", false);
    await until(second, "r1", ["stopped"]);
    expect(await isProcessAlive(ready.pid ?? 0)).toBe(false);
  });

  it("stops an engine found without its spec file, listing it as draining on its cards until it is gone", async () => {
    const ready = await readyThenClosed();
    await rm(path.join(directory, "logs"), { recursive: true, force: true });
    const second = makeSupervisor();
    await second.adopt([], (await findMarkedProcesses(directory)) ?? []);
    const draining = second.get("r1");
    expect(draining).toMatchObject({ state: "draining", cards: [0, 1], model: "tiny", pid: ready.pid });
    expect(draining?.adopted).toBeUndefined();
    expect(draining?.reason).toContain("was running without a record the agent could adopt");
    await until(second, "r1", ["stopped"]);
    expect(await isProcessGroupAlive(ready.pid ?? 0)).toBe(false);
  });

  it("reports an engine found dead as failed, never as adopted", async () => {
    const first = makeSupervisor();
    await first.start(spec());
    const ready = await until(first, "r1", ["ready", "failed"]);
    await first.close();
    const records = first.persisted();
    supervisors = supervisors.filter((supervisor) => supervisor !== first);
    killGroup(ready.pid);
    await waitFor(async () => !(await isProcessAlive(ready.pid ?? 0)), 5000, "the engine to die");
    const second = makeSupervisor();
    await second.adopt(records, (await findMarkedProcesses(directory)) ?? []);
    const failed = second.get("r1");
    expect(failed?.state).toBe("failed");
    expect(failed?.adopted).toBeUndefined();
    expect(failed?.reason).toContain("was no longer running when the agent restarted");
  });

  it("says stopped only once every process of the engine is gone, a worker that left its process group included", async () => {
    const supervisor = makeSupervisor({ stopGraceMs: 500 });
    await supervisor.start(spec({ env: { FAKE_ENGINE_MODE: "escaped-worker" } }));
    const ready = await until(supervisor, "r1", ["ready", "failed"]);
    const worker = Number(
      await waitFor(async () => /escaped worker pid (\d+)/.exec(await readFile(path.join(directory, "logs", "r1.log"), "utf8"))?.[1], 5000, "the worker's pid"),
    );
    extraCleanups.push(() => killGroup(worker));
    expect(await isProcessAlive(worker)).toBe(true);
    supervisor.stop("r1", false);
    await until(supervisor, "r1", ["stopped", "failed"]);
    expect(supervisor.get("r1")?.state).toBe("stopped");
    expect(await isProcessAlive(ready.pid ?? 0)).toBe(false);
    expect(await isProcessAlive(worker)).toBe(false);
  });
});
