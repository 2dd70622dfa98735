import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { FastifyInstance } from "fastify";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { killGroup, waitFor, writeFakeEngine } from "../support/fake-engine.js";
import { startFleetServer } from "../support/fleet-server.js";
import { startAgent, type RunningAgent } from "../../src/agent/agent.js";
import type { NodeView, ReplicaView } from "../../src/protocol/views.js";
import type { Store } from "../../src/store/open-store.js";
import { newToken } from "../../src/auth/tokens.js";
import { expectDocumentedShape } from "../support/documented-shape.js";

describe("fleet API with a real agent", () => {
  let directory: string;
  let store: Store;
  let app: FastifyInstance;
  let serverUrl: string;
  let joinToken: string;
  let engineScript: string;
  const agents: RunningAgent[] = [];
  const admin = newToken("admin");
  const as = { authorization: `Bearer ${admin}` };

  beforeAll(async () => {
    directory = await mkdtemp(path.join(tmpdir(), "llmgw-fleet-"));
    engineScript = await writeFakeEngine(directory);
    ({ store, app, url: serverUrl } = await startFleetServer(path.join(directory, "server"), admin));
    const created = await app.inject({ method: "POST", url: "/api/v1/models", headers: as, payload: { name: "tiny", context: 4096, profiles: [{ engine: "vllm", source: "hf://org/tiny@main", gpus: 1 }] } });
    expect(created.statusCode).toBe(201);
    const token = await app.inject({ method: "POST", url: "/api/v1/node-tokens", headers: as, payload: {} });
    expect(token.statusCode).toBe(201);
    joinToken = (token.json() as { token: string }).token;
  });

  afterAll(async () => {
    for (const agent of agents) {
      const groups = agent.supervisor.persisted().map((record) => record.process_group);
      await agent.close();
      for (const group of groups) killGroup(group);
    }
    await app.close();
    await store.close();
    await rm(directory, { recursive: true, force: true });
  });

  const startNode = async (name: string, extra: Partial<Parameters<typeof startAgent>[0]> = {}) => {
    const agent = await startAgent({
      server: serverUrl,
      joinToken,
      name,
      dataDirectory: path.join(directory, name),
      simulate: "2xH100-80GB@nvl0,cpu:16c/64g",
      llmgwCommand: [process.execPath, engineScript],
      healthPollMs: 100,
      stopGraceMs: 2000,
      logger: pino({ level: "silent" }),
      ...extra,
    });
    agents.push(agent);
    return agent;
  };

  it("lists a joined node with its cards, memory and engines, and never its credential", async () => {
    await startNode("gpu-1");
    const answer = await app.inject({ method: "GET", url: "/api/v1/nodes", headers: as });
    const nodes = (answer.json() as { nodes: NodeView[] }).nodes;
    expect(nodes).toHaveLength(1);
    expect(nodes[0]).toMatchObject({
      name: "gpu-1",
      state: "ready",
      address: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
      memory_bytes: 64 * 1024 ** 3,
      cpu_cores: 16,
      simulated: true,
      engines: ["vllm", "sglang", "trtllm", "llamacpp", "comfyui"],
      gpus: [
        { index: 0, class: "h100", memory_bytes: 80 * 1024 ** 3, fabric: "nvl0", uuid: "GPU-simulated-" + nodes[0]?.hostname + "-0" },
        { index: 1, class: "h100", fabric: "nvl0" },
      ],
    });
    expect(answer.body).not.toContain("llmgw_node_");
  });

  it("refuses a join token it did not issue", async () => {
    await expect(startNode("intruder", { joinToken: "llmgw_join_made-up" })).rejects.toThrow(/node intruder: the join token is not one this server issued/);
  });

  it("stops a second agent under a live node's name at its first join, with the server's message and hint, and logs the hint", async () => {
    const first = await startNode("gpu-twin");
    const logged: string[] = [];
    const logger = pino({ level: "info" }, { write: (line: string) => logged.push(line) });
    const refused = await startNode("gpu-twin", { dataDirectory: path.join(directory, "gpu-twin-second"), logger }).catch((error: unknown) => error as Error & { code?: string; hint?: string });
    expect(refused).toMatchObject({
      code: "name_taken",
      message: expect.stringContaining("refused agent gpu-twin's join: node name gpu-twin is taken by the agent at http://127.0.0.1:"),
      hint: expect.stringContaining("Give this agent its own --name"),
    });
    expect(logged.join("")).toContain("Give this agent its own --name");
    // The first agent keeps its name.
    const node = (await app.inject({ method: "GET", url: "/api/v1/nodes/gpu-twin", headers: as })).json() as NodeView;
    expect(node.address).toBe(first.url);
  });

  it("refuses an agent of another protocol version, naming both", async () => {
    const answer = await app.inject({ method: "POST", url: "/api/v1/agent/join", payload: { protocol: 2, join_token: joinToken, name: "future" } });
    expect(answer.statusCode).toBe(426);
    expect(answer.json()).toMatchObject({ error: { code: "version_unsupported", message: "llmgw server: this server speaks agent protocol 1; the agent sent protocol 2" } });
  });

  it("refuses a heartbeat with a credential it did not issue", async () => {
    const answer = await app.inject({
      method: "POST",
      url: "/api/v1/agent/heartbeat",
      headers: { authorization: "Bearer llmgw_node_forged" },
      payload: { protocol: 1, name: "gpu-1", address: "http://127.0.0.1:1", replicas: [] },
    });
    expect(answer.statusCode).toBe(401);
  });

  it("starts a replica on a node by API, reports it ready with its endpoint, serves its log, and stops it", async () => {
    const started = await app.inject({ method: "POST", url: "/api/v1/replicas", headers: as, payload: { model: "tiny", node: "gpu-1", id: "tiny-1" } });
    expect(started.statusCode).toBe(201);
    expect(started.json()).toMatchObject({ id: "tiny-1", model: "tiny", node: "gpu-1", gpus: [0], engine: "vllm" });
    const ready = await waitFor(async () => {
      const replica = (await app.inject({ method: "GET", url: "/api/v1/replicas/tiny-1", headers: as })).json() as ReplicaView;
      return replica.state === "ready" ? replica : undefined;
    }, 20_000, "tiny-1 ready");
    expect(ready.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expectDocumentedShape(ready, "Replica");

    const second = await app.inject({ method: "POST", url: "/api/v1/replicas", headers: as, payload: { model: "tiny", node: "gpu-1" } });
    expect(second.json()).toMatchObject({ gpus: [1] });
    const third = await app.inject({ method: "POST", url: "/api/v1/replicas", headers: as, payload: { model: "tiny", node: "gpu-1" } });
    expect(third.statusCode).toBe(409);
    expect(third.json()).toMatchObject({ error: { code: "cards_busy", message: expect.stringContaining("node gpu-1 has no 1 free card") } });

    const nodes = (await app.inject({ method: "GET", url: "/api/v1/nodes", headers: as })).json() as { nodes: NodeView[] };
    expect(nodes.nodes[0]?.gpus[0]?.replica).toBe("tiny-1");
    for (const node of nodes.nodes) expectDocumentedShape(node, "Node");
    const model = (await app.inject({ method: "GET", url: "/api/v1/models/tiny", headers: as })).json() as { replicas: { ready: number } };
    expect(model.replicas.ready).toBeGreaterThanOrEqual(1);

    const log = await app.inject({ method: "GET", url: "/api/v1/replicas/tiny-1/logs?tail=50", headers: as });
    expect(log.statusCode).toBe(200);
    expect(log.body).toContain("args=sim-engine --engine vllm -- serve");

    const stopping = await app.inject({ method: "DELETE", url: "/api/v1/replicas/tiny-1", headers: as });
    expect(stopping.statusCode).toBe(202);
    await waitFor(async () => (await app.inject({ method: "GET", url: "/api/v1/replicas/tiny-1", headers: as })).statusCode === 404, 15_000, "tiny-1 gone");
    expect(await app.inject({ method: "DELETE", url: `/api/v1/replicas/${(second.json() as ReplicaView).id}`, headers: as })).toMatchObject({ statusCode: 202 });
  });

  it("refuses to start an engine the node does not have", async () => {
    // A configured path that does not exist makes the node lack vllm whatever this machine has installed.
    await startNode("cpu-1", { simulate: undefined, llmgwCommand: undefined, enginePaths: { vllm: "/nonexistent/vllm" } });
    const answer = await app.inject({ method: "POST", url: "/api/v1/replicas", headers: as, payload: { model: "tiny", node: "cpu-1" } });
    expect(answer.statusCode).toBe(409);
    expect(answer.json()).toMatchObject({ error: { code: "engine_missing", message: expect.stringContaining("engine vllm is not installed on node cpu-1") } });
  });
});
