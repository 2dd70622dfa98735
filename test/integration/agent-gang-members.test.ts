import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FakeControlPlane } from "../support/fake-control-plane.js";
import { killGroup, waitFor } from "../support/fake-engine.js";
import { llmgwBin } from "../support/processes.js";
import type { ReplicaStatus } from "../../src/protocol/agent-protocol.js";

/**
 * Two `llmgw agent --simulate` processes (the built program, with the real
 * vLLM driver and the simulated engine) as the two nodes of one replica: the
 * leader's agent reserves the rendezvous port when it accepts the start, the
 * worker is given that port, and the simulated engines meet there over TCP.
 */
let directory: string;
let controlPlane: FakeControlPlane;
const children: ChildProcess[] = [];

interface AgentChild {
  readonly child: ChildProcess;
  readonly output: () => string;
  readonly exited: Promise<number | null>;
}

function startAgent(name: string, extra: readonly string[]): AgentChild {
  const child = spawn(
    process.execPath,
    [llmgwBin, "agent", "--server", controlPlane.url, "--token", controlPlane.joinToken, "--name", name, "--data-dir", path.join(directory, name), "--simulate", "2xH100-80GB@ib0", "--stop-grace", "2", ...extra],
    // Its own group, so the test can kill it and whatever it started.
    { detached: true, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, LLMGW_JOIN_TOKEN: undefined, LLMGW_FABRIC_ADDRESS: undefined, LLMGW_FABRIC_INTERFACE: undefined } },
  );
  children.push(child);
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  return { child, output: () => output, exited: new Promise((resolve) => child.once("exit", (code) => resolve(code))) };
}

beforeEach(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), "llmgw-gang-agents-"));
  controlPlane = new FakeControlPlane();
  await controlPlane.start();
});

afterEach(async () => {
  const groups = await Promise.all(
    ["node-a", "node-b"].map(async (name) => {
      try {
        const state = JSON.parse(await readFile(path.join(directory, name, "agent-state.json"), "utf8")) as { replicas: { process_group?: number }[] };
        return state.replicas.map((replica) => replica.process_group);
      } catch {
        return [];
      }
    }),
  );
  for (const child of children.splice(0)) killGroup(child.pid);
  for (const group of groups.flat()) killGroup(group);
  await controlPlane.stop();
  await rm(directory, { recursive: true, force: true });
});

/** The interface this machine holds 127.0.0.1 on, as the agent finds it. */
const loopback = Object.entries(os.networkInterfaces()).find(([, infos]) => (infos ?? []).some((info) => info.address === "127.0.0.1"))?.[0];

const model = { model: "big", profile: "two-nodes", engine: "vllm" as const, source: "hf://org/big@main", cards: [0, 1], simulation: { load_ms: 200 } };

describe("two agents running one replica over two nodes", () => {
  it("reports each node's fabric address, reserves the leader's rendezvous port at the start, and both members come up on it", async () => {
    const leaderAgent = startAgent("node-a", ["--fabric-address", "127.0.0.1"]);
    const workerAgent = startAgent("node-b", ["--fabric-address", "127.0.0.1"]);
    await waitFor(() => controlPlane.joins.length === 2, 60_000, `both agents to join:\n${leaderAgent.output()}\n${workerAgent.output()}`, 200);
    for (const join of controlPlane.joins) expect(join.fabric_network).toEqual({ address: "127.0.0.1", interface: loopback });
    await waitFor(() => controlPlane.lastHeartbeat("node-a")?.fabric_network?.address === "127.0.0.1", 20_000, "a heartbeat with the fabric address", 200);

    const started = await controlPlane.startReplica("node-a", { id: "r1", ...model, distributed: { nodes: 2, rank: 0, leader_address: "127.0.0.1", replica: "r1" } });
    expect(started.status).toBe(202);
    const port = (started.body as { replica: ReplicaStatus }).replica.rendezvous_port;
    expect(port).toEqual(expect.any(Number));
    // The state file is written as the answer goes out: a restarted agent reports the same port.
    const persisted = async () => {
      const state = JSON.parse(await readFile(path.join(directory, "node-a", "agent-state.json"), "utf8")) as { replicas: { spec: { id: string }; rendezvous_port?: number }[] };
      return state.replicas.find((replica) => replica.spec.id === "r1")?.rendezvous_port;
    };
    expect(await waitFor(persisted, 5000, "r1's rendezvous port in the state file", 50)).toBe(port);
    // A server that lost the answer and asks again is told the same port.
    expect(((await controlPlane.startReplica("node-a", { id: "r1", ...model, distributed: { nodes: 2, rank: 0, leader_address: "127.0.0.1", replica: "r1" } })).body as { replica: ReplicaStatus }).replica.rendezvous_port).toBe(port);

    const worker = await controlPlane.startReplica("node-b", { id: "r1-rank1", ...model, distributed: { nodes: 2, rank: 1, leader_address: "127.0.0.1", port, replica: "r1" } });
    expect(worker.status).toBe(202);
    const leaderReady = await waitFor(() => (controlPlane.lastReplica("node-a", "r1")?.state === "ready" ? controlPlane.lastReplica("node-a", "r1") : undefined), 60_000, `the leader ready:\n${leaderAgent.output()}`, 200);
    expect(leaderReady).toMatchObject({ rendezvous_port: port, endpoint: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/) });
    const workerReady = await waitFor(() => (controlPlane.lastReplica("node-b", "r1-rank1")?.state === "ready" ? controlPlane.lastReplica("node-b", "r1-rank1") : undefined), 60_000, `the worker ready:\n${workerAgent.output()}`, 200);
    expect(workerReady).not.toHaveProperty("endpoint");
    expect(workerReady).not.toHaveProperty("rendezvous_port");

    const leaderLog = await readFile(path.join(directory, "node-a", "logs", "r1.log"), "utf8");
    expect(leaderLog).toContain(`llmgw agent on node-a starts vllm (rank 0 of 2 of replica r1, leader 127.0.0.1:${port}) for big:`);
    expect(leaderLog).toMatch(/rank 1 of 2 joined from 127\.0\.0\.1:\d+; all ranks joined, serving/);
    expect(await readFile(path.join(directory, "node-b", "logs", "r1-rank1.log"), "utf8")).toContain(`llmgw agent on node-b starts vllm (rank 1 of 2 of replica r1, leader 127.0.0.1:${port}) for big:`);
  });

  it("refuses at start a fabric address no interface of the machine holds, naming the flag and listing the machine's addresses", async () => {
    const agent = startAgent("node-a", ["--fabric-address", "192.0.2.77"]);
    expect(await agent.exited).toBe(1);
    expect(agent.output()).toContain("--fabric-address 192.0.2.77: no network interface of this machine holds that address (it has ");
    expect(agent.output()).toContain("127.0.0.1");
    expect(agent.output()).toContain("--fabric-interface NAME");
    expect(controlPlane.joins).toHaveLength(0);
  });
});
