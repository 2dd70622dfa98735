import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import net from "node:net";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { EngineName } from "../../src/catalog/schema.js";
import type { EngineDriver } from "../../src/engines/driver.js";
import { isPortFree, isProcessAlive } from "../../src/agent/engine-process.js";
import { ReplicaSupervisor } from "../../src/agent/replica-supervisor.js";
import { supervisorTestOptions } from "../support/supervisor-options.js";
import type { ReplicaSupervisorOptions } from "../../src/agent/replicas/supervisor-options.js";
import { replicaSpecSchema, type ReplicaSpecInput, type ReplicaStatus } from "../../src/protocol/agent-protocol.js";
import { killGroup, standInDriverFor, waitFor, writeFakeEngine } from "../support/fake-engine.js";

/**
 * The members of a replica over several nodes, as one node's supervisor runs
 * them with the fake engine: the leader's rendezvous port reserved when its
 * start is accepted, and a worker that serves nothing (as vLLM's --headless)
 * called ready by its process alone.
 */
let directory: string;
let weights: string;
let supervisors: ReplicaSupervisor[] = [];
const held: net.Server[] = [];

beforeEach(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), "llmgw-gang-supervisor-"));
  weights = path.join(directory, "model.safetensors");
  await writeFile(weights, "weights");
});

afterEach(async () => {
  for (const supervisor of supervisors) {
    await supervisor.close();
    for (const record of supervisor.persisted()) killGroup(record.process_group);
  }
  supervisors = [];
  for (const server of held.splice(0)) server.close();
  await rm(directory, { recursive: true, force: true });
});

/** The fake engine, with no health path for a member of rank 1 and up, as the vLLM driver gives its headless workers. */
function headlessWorkersDriver(engineScript: string): (engine: EngineName) => EngineDriver {
  const standIn = standInDriverFor(process.execPath, [engineScript]);
  return (engine) => {
    const driver = standIn(engine);
    return { ...driver, build: (input) => ({ ...driver.build(input), healthPath: (input.distributed?.rank ?? 0) > 0 ? undefined : "/health" }) };
  };
}

async function makeSupervisor(overrides: Partial<ReplicaSupervisorOptions> = {}): Promise<ReplicaSupervisor> {
  const supervisor = new ReplicaSupervisor(supervisorTestOptions(directory, headlessWorkersDriver(await writeFakeEngine(directory)), { headlessSettleMs: 1500, ...overrides }));
  supervisors.push(supervisor);
  return supervisor;
}

const leader = (overrides: Partial<ReplicaSpecInput> = {}) =>
  replicaSpecSchema.parse({
    id: "r1",
    model: "big",
    profile: "two-nodes",
    engine: "vllm",
    source: weights,
    cards: [0, 1],
    distributed: { nodes: 2, rank: 0, leader_address: "127.0.0.1", replica: "r1" },
    ...overrides,
  });
const worker = (port: number, env: Record<string, string> = {}) =>
  replicaSpecSchema.parse({
    id: "r1-rank1",
    model: "big",
    profile: "two-nodes",
    engine: "vllm",
    source: weights,
    cards: [2],
    env,
    distributed: { nodes: 2, rank: 1, leader_address: "127.0.0.1", port, replica: "r1" },
  });

async function until(supervisor: ReplicaSupervisor, id: string, states: string[]): Promise<ReplicaStatus> {
  return await waitFor(() => {
    const status = supervisor.get(id);
    return status && states.includes(status.state) ? status : undefined;
  }, 20_000, `replica ${id} to be ${states.join(" or ")}`);
}

describe("a gang leader's rendezvous port", () => {
  it("is reserved when the start is accepted: in its first answer, the state file's record, a repeat's answer, and the engine's start line, apart from its API port", async () => {
    const supervisor = await makeSupervisor();
    const first = await supervisor.start(leader());
    const port = first.rendezvous_port;
    expect(first).toMatchObject({ state: "fetching", rendezvous_port: expect.any(Number) });
    expect(await isPortFree(port ?? 0)).toBe(true);
    expect(supervisor.persisted()[0]?.rendezvous_port).toBe(port);
    expect((await supervisor.start(leader())).rendezvous_port).toBe(port);

    const ready = await until(supervisor, "r1", ["ready", "failed"]);
    expect(ready).toMatchObject({ state: "ready", rendezvous_port: port, endpoint: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/) });
    expect(new URL(ready.endpoint ?? "").port).not.toBe(String(port));
    expect((await supervisor.start(leader())).rendezvous_port).toBe(port);
    const log = await readFile(supervisor.logPath("r1"), "utf8");
    expect(log).toContain(`llmgw agent on node-a starts vllm (rank 0 of 2 of replica r1, leader 127.0.0.1:${port}) for big:`);
    expect(JSON.parse(await readFile(supervisor.specPath("r1"), "utf8"))).toMatchObject({ rendezvous_port: port });
  });

  it("is the spec's own when it names one, and fails the start, naming it, when another process holds it", async () => {
    const holder = net.createServer();
    held.push(holder);
    await new Promise<void>((resolve) => holder.listen(0, "0.0.0.0", resolve));
    const taken = (holder.address() as AddressInfo).port;
    const supervisor = await makeSupervisor();
    const first = await supervisor.start(leader({ distributed: { nodes: 2, rank: 0, leader_address: "127.0.0.1", port: taken, replica: "r1" } }));
    expect(first.rendezvous_port).toBe(taken);
    const failed = await until(supervisor, "r1", ["failed", "ready"]);
    expect(failed.reason).toContain(`rendezvous port ${taken} on node node-a is already taken by another process, so vllm cannot lead replica r1 on it`);
  });

  it("is one port for two starts of one leader asked at once, and apart for two leaders", async () => {
    const supervisor = await makeSupervisor();
    const [once, twice] = await Promise.all([supervisor.start(leader()), supervisor.start(leader())]);
    expect(twice.rendezvous_port).toBe(once.rendezvous_port);
    expect(supervisor.list()).toHaveLength(1);
    const other = await supervisor.start(leader({ id: "r2", cards: [2, 3], distributed: { nodes: 2, rank: 0, leader_address: "127.0.0.1", replica: "r2" } }));
    expect(other.rendezvous_port).not.toBe(once.rendezvous_port);
  });

  it("is none of a worker's: it is told its leader's, and reports none", async () => {
    const supervisor = await makeSupervisor();
    expect(await supervisor.start(worker(29500))).not.toHaveProperty("rendezvous_port");
  });
});

describe("a worker that serves nothing to probe", () => {
  it("is ready once its process has run the settle time, though its port never answers, and lists no endpoint", async () => {
    const supervisor = await makeSupervisor();
    // never-healthy: a probe of its port would never pass.
    await supervisor.start(worker(29500, { FAKE_ENGINE_MODE: "never-healthy" }));
    const starting = await until(supervisor, "r1-rank1", ["starting", "ready", "failed"]);
    const ready = await until(supervisor, "r1-rank1", ["ready", "failed"]);
    expect(ready.state).toBe("ready");
    expect(Date.parse(ready.since) - Date.parse(starting.since)).toBeGreaterThanOrEqual(1400);
    expect(ready).not.toHaveProperty("endpoint");
    expect(ready.pid).toEqual(expect.any(Number));
    expect(supervisor.persisted()[0]).toMatchObject({ headless: true });
    expect(supervisor.persisted()[0]).not.toHaveProperty("health_path");
    expect(await readFile(supervisor.logPath("r1-rank1"), "utf8")).toContain("llmgw agent on node-a starts vllm (rank 1 of 2 of replica r1, leader 127.0.0.1:29500) for big:");
    // A stop does not wait out a drain of requests it never had.
    const stopAsked = Date.now();
    supervisor.stop("r1-rank1", true);
    await until(supervisor, "r1-rank1", ["stopped"]);
    expect(Date.now() - stopAsked).toBeLessThan(4000);
    expect(await isProcessAlive(ready.pid ?? 0)).toBe(false);
  });

  it("fails when its process exits within the settle time, with its exit and log tail", async () => {
    const supervisor = await makeSupervisor();
    await supervisor.start(worker(29500, { FAKE_ENGINE_MODE: "crash" }));
    const failed = await until(supervisor, "r1-rank1", ["failed", "ready"]);
    expect(failed.state).toBe("failed");
    expect(failed.reason).toContain("engine vllm exited with code 3 while loading big on node node-a");
    expect(failed.reason).toContain("RuntimeError: CUDA out of memory");
  });

  it("is adopted by a restarted agent as ready, by its process", async () => {
    const first = await makeSupervisor();
    await first.start(worker(29500, { FAKE_ENGINE_MODE: "never-healthy" }));
    const ready = await until(first, "r1-rank1", ["ready", "failed"]);
    await first.close();
    const records = first.persisted();
    supervisors = supervisors.filter((supervisor) => supervisor !== first);
    const second = await makeSupervisor({ healthPollMs: 100, startupTimeoutMs: 500 });
    await second.adopt(records);
    expect(second.get("r1-rank1")).toMatchObject({ state: "ready", adopted: true, pid: ready.pid });
    // Past the startup timeout a health wait would have failed it.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(second.get("r1-rank1")?.state).toBe("ready");
  });
});
