import { afterEach, describe, expect, it } from "vitest";
import { DomainError } from "../../errors/light.js";
import { replicaSpecSchema } from "../../protocol/agent-protocol.js";
import { waitReady, type ReadinessSteps } from "./engine-readiness.js";
import { newReplica, type Replica } from "./replica-record.js";
import { closeCountingServers, countingServer } from "../../../test/support/counting-server.js";

afterEach(closeCountingServers);

const steps: ReadinessSteps = {
  options: { nodeName: "node-b", healthPollMs: 20, headlessSettleMs: 300 },
  probeHost: "127.0.0.1",
  interrupted: (replica) => replica.abort.signal.aborted,
  portTaken: (_replica, port) => new DomainError("port_taken", `port ${port} taken`, "free it"),
  logTail: async () => "\nlog: worker died",
};

function worker(port: number): Replica {
  const replica = newReplica(
    replicaSpecSchema.parse({
      id: "r1-rank1",
      model: "big",
      profile: "two-nodes",
      engine: "vllm",
      source: "hf://org/big@main",
      cards: [0],
      distributed: { nodes: 2, rank: 1, leader_address: "10.0.0.1", port: 29500, replica: "r1" },
    }),
    "starting",
  );
  Object.assign(replica, { port, pid: 4242, headless: true, healthPath: undefined });
  return replica;
}

describe("waiting for an engine that serves nothing to probe", () => {
  it("calls it ready once its process has run the settle time, without asking its port anything", async () => {
    const server = await countingServer();
    const started = Date.now();
    await waitReady(steps, worker(server.port), 60_000);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(server.asked()).toBe(0);
  });

  it("fails it when its process exits within the settle time, with the exit and the log tail", async () => {
    const replica = worker(1);
    setTimeout(() => (replica.exit = { code: 1, signal: null }), 50);
    await expect(waitReady(steps, replica, 60_000)).rejects.toThrow(
      expect.objectContaining({ code: "engine_failed", message: "engine vllm exited with code 1 while loading big on node node-b\nlog: worker died" }),
    );
  });

  it("returns without a verdict when the wait is aborted (a stop)", async () => {
    const replica = worker(1);
    setTimeout(() => replica.abort.abort(), 30);
    const started = Date.now();
    await waitReady(steps, replica, 60_000);
    expect(Date.now() - started).toBeLessThan(290);
  });

  it("still probes the health path of an engine that has one", async () => {
    const server = await countingServer();
    const replica = worker(server.port);
    Object.assign(replica, { headless: false, healthPath: "/health" });
    await waitReady(steps, replica, 60_000);
    expect(server.asked()).toBe(1);
  });
});
