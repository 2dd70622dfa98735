import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { FastifyInstance } from "fastify";
import pino from "pino";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { killGroup, waitFor, writeFakeEngine } from "../../../test/support/fake-engine.js";
import { startAgent, type RunningAgent } from "../../agent/agent.js";
import { modelNameSchema } from "../../catalog/schema.js";
import { nodeNameSchema, replicaIdSchema } from "../../protocol/agent-protocol.js";
import type { ReplicaView } from "../../protocol/views.js";
import { buildApp } from "../../server/build-app.js";
import { CatalogService } from "../../server/catalog-service.js";
import { FleetService } from "../../server/fleet-service.js";
import { openStore, type Store } from "../../store/open-store.js";
import { insertToken } from "../../store/token-rows.js";
import { hashToken, newToken } from "../tokens.js";

// The longest of each the schemas accept, made of the characters that grow most when encoded (/ and : take 3).
const longestModel = `a${":/".repeat(63)}z`;
const longestNode = `n${"-".repeat(61)}1`;
const longestReplica = `r${"._-".repeat(42)}1`;

describe("the longest names and ids the schemas accept work on every route, over real HTTP", () => {
  let directory: string;
  let store: Store;
  let app: FastifyInstance;
  let serverUrl: string;
  let agent: RunningAgent | undefined;
  const admin = newToken("admin");

  const call = async (method: "GET" | "POST" | "DELETE", route: string, body?: unknown) => {
    const answer = await request(`${serverUrl}${route}`, {
      method,
      headers: { authorization: `Bearer ${admin}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await answer.body.text();
    return { status: answer.statusCode, text, json: () => JSON.parse(text) as Record<string, unknown> };
  };

  beforeAll(async () => {
    directory = await mkdtemp(path.join(tmpdir(), "llmgw-long-names-"));
    const engineScript = await writeFakeEngine(directory);
    store = await openStore({ database: undefined, dataDir: path.join(directory, "server") });
    await insertToken(store.db, { id: randomUUID(), name: "admin", role: "admin", hash: hashToken(admin) }, new Date().toISOString());
    const catalog = new CatalogService(store, [], "server.yaml");
    const fleet = new FleetService(store, catalog, { heartbeatDeadlineMs: 15_000, settlingWindowMs: 20_000, heartbeatIntervalMs: 300, gpuMemoryUtilization: 0.9 });
    app = await buildApp({ store, catalog, fleetService: fleet, adminTokenHint: "see admin-token" });
    serverUrl = await app.listen({ host: "127.0.0.1", port: 0 });
    const joinToken = (await call("POST", "/api/v1/node-tokens", {})).json().token as string;
    agent = await startAgent({
      server: serverUrl,
      joinToken,
      name: longestNode,
      dataDirectory: path.join(directory, "agent"),
      simulate: "1xH100-80GB@nvl0,cpu:8c/32g",
      llmgwCommand: [process.execPath, engineScript],
      healthPollMs: 100,
      stopGraceMs: 2000,
      logger: pino({ level: "silent" }),
    });
  });

  afterAll(async () => {
    const groups = agent?.supervisor.persisted().map((record) => record.process_group) ?? [];
    await agent?.close();
    for (const group of groups) killGroup(group);
    await app.close();
    await store.close();
    await rm(directory, { recursive: true, force: true });
  });

  it("uses names the schemas accept at their longest", () => {
    expect(modelNameSchema.safeParse(longestModel).success).toBe(true);
    expect(modelNameSchema.safeParse(`${longestModel}x`).success).toBe(false);
    expect(nodeNameSchema.safeParse(longestNode).success).toBe(true);
    expect(nodeNameSchema.safeParse(`${longestNode}x`).success).toBe(false);
    expect(replicaIdSchema.safeParse(longestReplica).success).toBe(true);
    expect(replicaIdSchema.safeParse(`${longestReplica}x`).success).toBe(false);
  });

  it("adds, shows, changes, runs and removes a model of the longest name, on a node of the longest name, as a replica of the longest id", async () => {
    const model = encodeURIComponent(longestModel);
    expect((await call("POST", "/api/v1/models", { name: longestModel, profiles: [{ engine: "vllm", source: "hf://org/tiny@main", gpus: 1 }] })).status).toBe(201);
    expect((await call("GET", `/api/v1/models/${model}`)).json()).toMatchObject({ name: longestModel });
    expect((await call("POST", `/api/v1/models/${model}/scale`, { min: 0, max: 1 })).json()).toMatchObject({ scaling: { min: 0, max: 1 } });
    expect((await call("POST", `/api/v1/models/${model}/owner`, { owner: "team" })).json()).toMatchObject({ owner: "team" });
    expect((await call("GET", `/api/v1/audit?model=${model}`)).json().events).toHaveLength(3);

    expect((await call("GET", `/api/v1/nodes/${longestNode}`)).json()).toMatchObject({ name: longestNode, state: "ready" });
    const started = await call("POST", "/api/v1/replicas", { model: longestModel, node: longestNode, id: longestReplica });
    expect(started.status, started.text).toBe(201);
    await waitFor(async () => ((await call("GET", `/api/v1/replicas/${longestReplica}`)).json() as unknown as ReplicaView).state === "ready" || undefined, 20_000, "replica ready");
    expect((await call("GET", `/api/v1/replicas?model=${model}&node=${longestNode}`)).json().replicas).toHaveLength(1);
    expect((await call("GET", `/api/v1/replicas/${longestReplica}/logs?tail=5`)).status).toBe(200);
    expect((await call("DELETE", `/api/v1/replicas/${longestReplica}`)).status).toBe(202);
    await waitFor(async () => (await call("GET", `/api/v1/replicas/${longestReplica}`)).status === 404 || undefined, 20_000, "replica gone");

    expect((await call("DELETE", `/api/v1/models/${model}`)).json()).toEqual({ removed: longestModel });
    expect((await call("GET", `/api/v1/models/${model}`)).json()).toMatchObject({ error: { code: "model_not_found" } });
  });
});
