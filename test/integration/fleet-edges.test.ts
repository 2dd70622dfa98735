import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { FastifyInstance } from "fastify";
import pino from "pino";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { killGroup, waitFor, writeFakeEngine } from "../support/fake-engine.js";
import { startFleetServer } from "../support/fleet-server.js";
import { startAgent, type RunningAgent } from "../../src/agent/agent.js";
import { modelNameSchema } from "../../src/catalog/schema.js";
import { nodeNameSchema, replicaIdSchema } from "../../src/protocol/agent-protocol.js";
import type { ReplicaView } from "../../src/protocol/views.js";
import { findReplica } from "../../src/store/fleet-rows.js";
import type { Store } from "../../src/store/open-store.js";
import { newToken } from "../../src/auth/tokens.js";

// The longest of each the schemas accept, made of the characters that grow most when encoded (/ and : take 3).
const longestModel = `a${":/".repeat(63)}z`;
const longestNode = `n${"-".repeat(61)}1`;
const longestReplica = `r${"._-".repeat(42)}1`;

describe("the fleet API at its edges, over real HTTP with a real agent", () => {
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
    ({ store, app, url: serverUrl } = await startFleetServer(path.join(directory, "server"), admin));
    const joinToken = (await call("POST", "/api/v1/node-tokens", {})).json().token as string;
    agent = await startAgent({
      server: serverUrl,
      joinToken,
      name: longestNode,
      dataDirectory: path.join(directory, "agent"),
      simulate: "4xH100-80GB@nvl0,cpu:8c/32g",
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

  it("starts a replica with a secret from the server's environment, which no answer, audit or stored row holds", async () => {
    const secret = "hf_secret_from_server_environment";
    process.env["LLMGW_TEST_SERVER_HF_TOKEN"] = secret;
    try {
      const entry = { name: "gated", profiles: [{ engine: "vllm", source: "hf://org/gated@main", gpus: 1, secret_env: { HF_TOKEN: "LLMGW_TEST_SERVER_HF_TOKEN" } }] };
      const added = await call("POST", "/api/v1/models", entry);
      expect(added.status, added.text).toBe(201);
      expect(added.json()).toMatchObject({ profiles: [{ secret_env: { HF_TOKEN: "LLMGW_TEST_SERVER_HF_TOKEN" } }] });
      const started = await call("POST", "/api/v1/replicas", { model: "gated", node: longestNode, id: "gated-1" });
      expect(started.status, started.text).toBe(201);
      // The agent got the value: it is what the engine runs with.
      const onAgent = agent?.supervisor.persisted().find((record) => record.spec.id === "gated-1");
      expect(onAgent?.spec.env["HF_TOKEN"]).toBe(secret);
      // The server kept only the variable's name.
      const row = await findReplica(store.db, "gated-1");
      expect(JSON.stringify(row?.spec)).toContain("$LLMGW_TEST_SERVER_HF_TOKEN");
      expect(JSON.stringify(row?.spec)).not.toContain(secret);
      for (const route of ["/api/v1/models/gated", "/api/v1/audit?model=gated", "/api/v1/replicas/gated-1"]) {
        expect((await call("GET", route)).text, route).not.toContain(secret);
      }
      expect((await call("DELETE", "/api/v1/replicas/gated-1")).status).toBe(202);
    } finally {
      delete process.env["LLMGW_TEST_SERVER_HF_TOKEN"];
    }
  });

  it("refuses to add, and to start, a profile whose secret_env names a variable the server lacks, naming it", async () => {
    const entry = { name: "ungated", profiles: [{ engine: "vllm", source: "x", gpus: 1, secret_env: { HF_TOKEN: "LLMGW_TEST_UNSET_VARIABLE" } }] };
    const refused = await call("POST", "/api/v1/models", entry);
    expect(refused.status).toBe(400);
    expect(refused.json()).toMatchObject({
      error: {
        code: "config_invalid",
        message: "model ungated profile vllm: secret_env HF_TOKEN reads $LLMGW_TEST_UNSET_VARIABLE from the server's environment, and the server has no LLMGW_TEST_UNSET_VARIABLE set",
        hint: expect.stringContaining("Set LLMGW_TEST_UNSET_VARIABLE in the environment of the llmgw server process"),
      },
    });
    // Added while the variable was set, then started after it was unset (the server restarted without it).
    process.env["LLMGW_TEST_UNSET_VARIABLE"] = "value";
    expect((await call("POST", "/api/v1/models", entry)).status).toBe(201);
    delete process.env["LLMGW_TEST_UNSET_VARIABLE"];
    const start = await call("POST", "/api/v1/replicas", { model: "ungated", node: longestNode });
    expect(start.status).toBe(400);
    expect(start.json()).toMatchObject({ error: { code: "config_invalid", message: expect.stringContaining("the server has no LLMGW_TEST_UNSET_VARIABLE set") } });
  });

  it("serves a replica's log with its secret values and URL passwords masked, though the engine printed them", async () => {
    process.env["LLMGW_TEST_LOG_SECRET"] = "from-server-env-5678";
    try {
      const entry = {
        name: "chatty",
        profiles: [{ engine: "vllm", source: "hf://org/tiny@main", gpus: 1, args: ["--api-key", "sk-live-secret-1234", "--mirror=https://robot:mirror-pass@m.example/"], secret_env: { HF_TOKEN: "LLMGW_TEST_LOG_SECRET" } }],
      };
      expect((await call("POST", "/api/v1/models", entry)).status).toBe(201);
      expect((await call("POST", "/api/v1/replicas", { model: "chatty", node: longestNode, id: "chatty-1" })).status).toBe(201);
      const log = await waitFor(async () => {
        const text = (await call("GET", "/api/v1/replicas/chatty-1/logs?tail=50")).text;
        return text.includes("fake engine pid") ? text : undefined;
      }, 20_000, "the engine's first line");
      expect(log).toContain("args=");
      expect(log).not.toContain("sk-live-secret-1234");
      expect(log).not.toContain("mirror-pass");
      expect(log).toContain("--api-key ***");
      expect(log).toContain("https://robot:***@m.example/");
      expect((await call("DELETE", "/api/v1/replicas/chatty-1")).status).toBe(202);
    } finally {
      delete process.env["LLMGW_TEST_LOG_SECRET"];
    }
  });

  it("masks a failed replica's reason, which carries the engine's log tail, like the log itself", async () => {
    const entry = { name: "crashy", profiles: [{ engine: "vllm", source: "hf://org/tiny@main", gpus: 1, args: ["--api-key", "sk-crash-secret-9876"], env: { FAKE_ENGINE_MODE: "crash" } }] };
    expect((await call("POST", "/api/v1/models", entry)).status).toBe(201);
    expect((await call("POST", "/api/v1/replicas", { model: "crashy", node: longestNode, id: "crashy-1" })).status).toBe(201);
    const failed = await waitFor(async () => {
      const replica = (await call("GET", "/api/v1/replicas/crashy-1")).json() as unknown as ReplicaView;
      return replica.state === "failed" ? replica : undefined;
    }, 20_000, "crashy-1 failed");
    expect(failed.reason).toContain("CUDA out of memory");
    expect(failed.reason).toContain("--api-key ***");
    for (const route of ["/api/v1/replicas/crashy-1", "/api/v1/replicas?model=crashy"]) expect((await call("GET", route)).text, route).not.toContain("sk-crash-secret-9876");
    await call("DELETE", "/api/v1/replicas/crashy-1");
  });
});
