import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FakeControlPlane } from "../support/fake-control-plane.js";
import { killGroup, standInDriverFor, waitFor, writeFakeEngine } from "../support/fake-engine.js";
import { startAgent, type AgentOptions, type RunningAgent } from "../../src/agent/agent.js";

let directory: string;
let engineScript: string;
const planes: FakeControlPlane[] = [];
const agents: RunningAgent[] = [];
const engineGroups: (number | undefined)[] = [];

beforeEach(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), "llmgw-agent-identity-"));
  engineScript = await writeFakeEngine(directory);
});

afterEach(async () => {
  for (const agent of agents.splice(0)) await agent.close();
  for (const group of engineGroups.splice(0)) killGroup(group);
  for (const plane of planes.splice(0)) await plane.stop();
  await rm(directory, { recursive: true, force: true });
});

async function plane(): Promise<FakeControlPlane> {
  const started = new FakeControlPlane();
  await started.start();
  planes.push(started);
  return started;
}

async function agent(server: string, overrides: Partial<AgentOptions> = {}): Promise<RunningAgent> {
  const running = await startAgent({
    server,
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

const stateFile = () => path.join(directory, "data", "agent-state.json");
const savedState = async () => JSON.parse(await readFile(stateFile(), "utf8")) as { server_url: string; server_id?: string; credential?: string };

/** An agent joined to `server` at `url` with replica r1 ready, then closed (its engine runs on). */
async function joinedWithReplica(server: FakeControlPlane, url: string): Promise<{ pid: number; credential: string }> {
  const first = await agent(url, { joinToken: server.joinToken });
  await server.startReplica("node-a", { id: "r1", model: "tiny", profile: "default", engine: "vllm", source: "hf://org/tiny@main", cards: [0] });
  const ready = await waitFor(() => {
    const status = server.lastReplica("node-a", "r1");
    return status?.state === "ready" ? status : undefined;
  }, 30_000, "r1 ready");
  engineGroups.push(ready.pid);
  await first.close();
  agents.splice(agents.indexOf(first), 1);
  return { pid: ready.pid as number, credential: server.credentials.get("node-a") as string };
}

describe("an agent's credential across a change of the server's address", () => {
  it("keeps its node, credential and adopted replica when the same server is reached by another spelling of its URL", async () => {
    const server = await plane();
    const { pid, credential } = await joinedWithReplica(server, `http://127.0.0.1:${server.port}`);
    expect(await savedState()).toMatchObject({ server_url: `http://127.0.0.1:${server.port}/`, server_id: server.serverId });

    const beatsBefore = server.heartbeats.length;
    const moved = await agent(`http://localhost:${server.port}`);
    await moved.heartbeatNow();
    // No second join: the same credential, and the engine adopted, not started again.
    expect(server.joins).toHaveLength(1);
    expect(server.presented.at(-1)).toBe(`Bearer ${credential}`);
    expect(server.heartbeats.slice(beatsBefore).at(-1)?.replicas).toEqual([expect.objectContaining({ id: "r1", state: "ready", pid, adopted: true })]);
    expect(await savedState()).toMatchObject({ server_url: `http://localhost:${server.port}/`, server_id: server.serverId, credential });
  });

  it("sends its credential to no server of another identity, stops saying what is in force and what to do, and keeps its state for its own server", async () => {
    const own = await plane();
    const { credential } = await joinedWithReplica(own, own.url);
    const other = await plane();

    const refused = agent(other.url);
    await expect(refused).rejects.toThrow(`the server at ${other.url}/ is not the server agent node-a joined: it presents identity ${other.serverId ?? ""}`);
    await expect(refused).rejects.toMatchObject({ hint: expect.stringContaining(`point --server back at ${own.url}/`) as string });
    // Not a byte of the credential reached it: no heartbeat, no join, no Authorization header at all.
    expect(other.presented).toEqual([]);
    expect(other.heartbeats).toEqual([]);
    expect(other.joins).toEqual([]);
    expect(await savedState()).toMatchObject({ server_url: `${own.url}/`, server_id: own.serverId, credential });

    // Its own server still takes it back, token-less.
    const back = await agent(own.url);
    await back.heartbeatNow();
    expect(own.joins).toHaveLength(1);
  });

  it("sends its credential to no server that tells no identity (an earlier release)", async () => {
    const own = await plane();
    await joinedWithReplica(own, own.url);
    const older = await plane();
    older.serverId = undefined;
    await expect(agent(older.url)).rejects.toThrow("it does not tell its identity");
    expect(older.presented).toEqual([]);
  });

  it("moves to a server of another identity when given a join token from it, and reports its running replica there", async () => {
    const own = await plane();
    const { pid } = await joinedWithReplica(own, own.url);
    const other = await plane();
    const moved = await agent(other.url, { joinToken: other.joinToken });
    await moved.heartbeatNow();
    expect(other.joins).toHaveLength(1);
    // Every header it was sent carries the credential it gave, never the other server's.
    expect(new Set(other.presented)).toEqual(new Set([`Bearer ${other.credentials.get("node-a") ?? ""}`]));
    expect(other.lastReplica("node-a", "r1")).toMatchObject({ pid, adopted: true });
    expect(await savedState()).toMatchObject({ server_url: `${other.url}/`, server_id: other.serverId });
  });
});
