import { randomUUID } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { temporaryDirectory } from "../../../test/support/temporary-directory.js";
import { expectDocumentedShape } from "../../../test/support/documented-shape.js";
import { hashToken, newToken } from "../../auth/tokens.js";
import { checkpointTensors, ggufHeaderBytes, writeBytes, writeSyntheticCheckpoint } from "../../plan/header-only-checkpoint.js";
import { fixtureArchitecture, fixtureConfig } from "../../plan/testing/fixtures.js";
import { startHubServer, type HubServer } from "../../hub/local-hub.js";
import { buildApp } from "../../server/build-app.js";
import { CatalogService } from "../../services/catalog-service.js";
import { openStore, type Store } from "../../store/open-store.js";
import { insertToken } from "../../store/token-rows.js";

describe("POST /api/v1/models reads the sources before storing", () => {
  let store: Store;
  let app: FastifyInstance;
  let hub: HubServer;
  const admin = newToken("admin");
  const headers = { authorization: `Bearer ${admin}` };

  beforeAll(async () => {
    const workspace = temporaryDirectory("llmgw-door-");
    await writeSyntheticCheckpoint(path.join(workspace, "qwen"), fixtureConfig("Qwen2.5-7B-Instruct"), checkpointTensors(fixtureArchitecture("Qwen2.5-7B-Instruct")), 2);
    await mkdir(path.join(workspace, "mirror", "readme-only"), { recursive: true });
    await writeFile(path.join(workspace, "mirror", "readme-only", "README.md"), "weights coming soon");
    await writeBytes(
      path.join(workspace, "mirror", "sql-lora.gguf"),
      ggufHeaderBytes({ "general.architecture": "llama", "general.type": "adapter", "adapter.type": "lora" }, [{ name: "blk.0.attn_q.weight.lora_a", dimensions: [4096, 16], type: "F16" }]),
    );
    hub = await startHubServer({ repositories: { "Qwen/Qwen2.5-7B-Instruct": path.join(workspace, "qwen") }, mirrorRoot: path.join(workspace, "mirror") });
    store = await openStore({ database: undefined, dataDir: path.join(workspace, "data") });
    await insertToken(store.db, { id: randomUUID(), name: "admin", role: "admin", hash: hashToken(admin) }, new Date().toISOString());
    app = await buildApp({
      store,
      catalog: new CatalogService(store, [], "server.yaml"),
      adminTokenHint: "see admin-token",
      plan: { hubEndpoint: hub.url, hubToken: () => undefined, gpuMemoryUtilization: 0.9, mirror: `${hub.url}/mirror/` },
    });
  });
  afterAll(async () => {
    await app?.close();
    await store?.close();
    await hub?.close();
  });

  const add = (body: unknown, query = "") => app.inject({ method: "POST", url: `/api/v1/models${query}`, headers, payload: body as object });
  const stored = async (name: string) => (await app.inject({ method: "GET", url: `/api/v1/models/${name}`, headers })).statusCode === 200;

  it("stores a model whose hub repository answers, with each source's size in the answer", async () => {
    const response = await add({ name: "qwen", profiles: [{ engine: "vllm", source: "hf://Qwen/Qwen2.5-7B-Instruct@main", gpus: 1 }] });
    expect(response.statusCode).toBe(201);
    const answer = response.json();
    expectDocumentedShape(answer, "AddedModel");
    expect(answer.sources_checked).toEqual([
      { where: "profiles[0].source", source: "hf://Qwen/Qwen2.5-7B-Instruct@main", bytes: 7_615_616_512 * 2, summary: expect.stringMatching(/^14\.\d GiB \(safetensors BF16, 7\.62B parameters\)$/) },
    ]);
    // Read through the configured hub endpoint's file list, not a guessed URL.
    expect(hub.requests.some((request) => request.startsWith("/api/models/Qwen/Qwen2.5-7B-Instruct/tree/main"))).toBe(true);
  });

  it("refuses every failing source at once, each with its place and reason, and stores nothing", async () => {
    const response = await add({
      name: "broken",
      profiles: [
        { engine: "vllm", source: "mirror:qwen-typo/", gpus: 1 },
        { engine: "vllm", source: "mirror:readme-only/", gpus: 1 },
        { engine: "llamacpp", source: "mirror:sql-lora.gguf" },
      ],
    });
    expect(response.statusCode).toBe(422);
    const error = response.json().error as { code: string; message: string; hint: string; details: { where: string; message: string }[] };
    expect(error.code).toBe("source_unreadable");
    expect(error.message).toContain("3 sources do not answer as models");
    expect(error.details.map((detail) => detail.where)).toEqual(["broken.profiles[0].source", "broken.profiles[1].source", "broken.profiles[2].source"]);
    expect(error.details[0]?.message).toMatch(/config\.json of .*qwen-typo\/.*not found/);
    expect(error.details[1]?.message).toContain("config.json");
    expect(error.details[2]?.message).toContain("is a GGUF lora adapter, not a model");
    expect(error.hint).toContain("source_check=false");
    expect(await stored("broken")).toBe(false);
  });

  it("stores a model unread with ?source_check=false, and says it did not read it", async () => {
    const response = await add({ name: "later", profiles: [{ engine: "vllm", source: "mirror:not-uploaded-yet/", gpus: 1 }] }, "?source_check=false");
    expect(response.statusCode).toBe(201);
    expect(response.json().sources_checked).toBeNull();
    expect(await stored("later")).toBe(true);
  });

  it("refuses a source_check value other than true or false, naming the parameter", async () => {
    const response = await add({ name: "unsure", profiles: [{ engine: "vllm", source: "mirror:qwen/", gpus: 1 }] }, "?source_check=no");
    expect(response.statusCode).toBe(400);
    expect(response.json().error.message).toContain("source_check");
    expect(await stored("unsure")).toBe(false);
  });

  it("refuses a taken name before reading any source", async () => {
    const before = hub.requests.length;
    const response = await add({ name: "qwen", profiles: [{ engine: "vllm", source: "mirror:qwen-typo/", gpus: 1 }] });
    expect(response.statusCode).toBe(409);
    expect(hub.requests.length).toBe(before);
  });

  it("reads nothing for an external model", async () => {
    const response = await add({ name: "remote", external: { base_url: "https://api.example/v1" } });
    expect(response.statusCode).toBe(201);
    expect(response.json().sources_checked).toEqual([]);
  });
});
