import os from "node:os";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import type { ReplicaState } from "../../protocol/agent-protocol.js";
import { replicaSpecSchema } from "../../protocol/agent-protocol.js";
import type { PersistedReplica } from "../agent-state.js";
import { processStartTicks } from "../engine-process.js";
import type { EngineLauncher } from "./engine-launcher.js";
import { adoptReplicas, type AdoptionSteps } from "./replica-adoption.js";
import { ReplicaFiles } from "./replica-files.js";
import { replicaStatus, type Replica } from "./replica-record.js";
import type { ReplicaSupervisorOptions } from "./supervisor-options.js";
import { closeCountingServers, countingServer } from "../../../test/support/counting-server.js";

afterEach(closeCountingServers);

function member(rank: number) {
  return replicaSpecSchema.parse({
    id: rank === 0 ? "r1" : `r1-rank${rank}`,
    model: "big",
    profile: "two-nodes",
    engine: "vllm",
    source: "hf://org/big@main",
    cards: [0],
    distributed: { nodes: 2, rank, leader_address: "10.0.0.1", ...(rank > 0 ? { port: 29500 } : {}), replica: "r1" },
  });
}

/** Adoption over stand-in steps: the record's process is this test's own, which is alive for sure. */
async function adopt(record: Partial<PersistedReplica>) {
  const replicas = new Map<string, Replica>();
  const waited: string[] = [];
  const transitions: ReplicaState[] = [];
  const steps: AdoptionSteps = {
    replicas,
    options: { nodeName: "node-b", startupTimeoutMs: 60_000, stopGraceMs: 1000, dataDirectory: os.tmpdir(), logger: pino({ level: "silent" }) } as ReplicaSupervisorOptions,
    files: new ReplicaFiles(os.tmpdir()),
    launcher: {} as EngineLauncher,
    probeHost: () => "127.0.0.1",
    transition: (replica, state) => {
      replica.state = state;
      transitions.push(state);
    },
    run: async () => undefined,
    stopNow: async () => undefined,
    waitReady: async (replica) => {
      waited.push(replica.spec.id);
    },
    fail: async () => undefined,
    interrupted: () => false,
    unlistedStop: () => undefined,
  };
  const spec = record.spec ?? member(1);
  const full: PersistedReplica = { spec, state: "starting", since: new Date().toISOString(), pid: process.pid, start_ticks: await processStartTicks(process.pid), launch_id: "launch-1", ...record };
  await adoptReplicas(steps, [full], []);
  return { replica: replicas.get(spec.id), waited, transitions };
}

describe("adopting an engine after the agent restarted", () => {
  it("takes a live headless worker as ready by its process alone, asking its port nothing", async () => {
    const server = await countingServer();
    const { replica, waited, transitions } = await adopt({ headless: true, port: server.port });
    expect(replica && replicaStatus(replica, "127.0.0.1")).toMatchObject({ state: "ready", adopted: true, pid: process.pid });
    expect(transitions).toEqual(["ready"]);
    expect(waited).toEqual([]);
    expect(server.asked()).toBe(0);
  });

  it("asks an engine with a health path, and waits for it when it does not answer yet", async () => {
    const server = await countingServer();
    expect((await adopt({ health_path: "/health", port: server.port, state: "ready" })).replica?.state).toBe("ready");
    expect(server.asked()).toBe(1);
    const silent = await adopt({ health_path: "/health", port: 1 });
    expect(silent.waited).toEqual(["r1-rank1"]);
  });

  it("keeps a leader's rendezvous port, so the restarted agent reports the one the members were given", async () => {
    const server = await countingServer();
    const { replica } = await adopt({ spec: member(0), health_path: "/health", port: server.port, state: "ready", rendezvous_port: 29517 });
    expect(replica && replicaStatus(replica, "127.0.0.1").rendezvous_port).toBe(29517);
  });
});
