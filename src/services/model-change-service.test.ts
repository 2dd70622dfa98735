import { randomUUID } from "node:crypto";
import path from "node:path";
import type { FastifyInstance } from "fastify";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { hashToken, newToken } from "../auth/tokens.js";
import type { PlacedEntry } from "../catalog/build-catalog.js";
import { defaultReconcileSettings } from "../catalog/reconcile-settings.js";
import type { ModelEntry } from "../catalog/schema.js";
import type { InventoryNode } from "../fleet/pools.js";
import { registerModelChangeRoutes } from "../api/routes/model-changes.js";
import { readModelSource } from "../plan/read-model-source.js";
import { fixtureFacts } from "../plan/testing/fixtures.js";
import { Reconciler, type ChangeToPreview } from "../reconcile/reconciler.js";
import { ModelFactsService } from "./model-facts-service.js";
import { RestartService } from "./restart-service.js";
import { buildApp } from "../server/build-app.js";
import { listAuditEvents } from "../store/audit-rows.js";
import { openStore, type Store } from "../store/open-store.js";
import { listEvents } from "../store/reconcile-rows.js";
import { insertToken } from "../store/token-rows.js";
import { storesUnderTest } from "../../test/support/postgres.js";
import { refusal } from "../../test/support/refusal.js";
import { CatalogService } from "./catalog-service.js";
import { FleetService } from "./fleet-service.js";
import { ModelChangeService } from "./model-change-service.js";
import { checkpointTensors, writeSyntheticCheckpoint } from "../plan/header-only-checkpoint.js";
import { fixtureArchitecture, fixtureConfig } from "../plan/testing/fixtures.js";
import { startHubServer } from "../hub/local-hub.js";
import { temporaryDirectory } from "../../test/support/temporary-directory.js";

const operator = { token: "admin", user: "alice" };
const declared: PlacedEntry[] = [{ entry: { name: "pinned", context: 4096, profiles: [{ engine: "vllm", source: "/models/qwen", gpu_class: "h100" }] }, source: "file", place: "server.yaml models[0] (pinned)" }];
const chat: ModelEntry = {
  name: "chat",
  context: 8192,
  profiles: [
    { name: "h100", engine: "vllm", source: "/models/qwen", gpu_class: "h100" },
    { name: "cpu", engine: "llamacpp", source: "/models/qwen.gguf", slots: 2 },
  ],
};
/** One node with four H100s: the fleet the checks read, as the fleet service reports it. */
const fourH100: InventoryNode = {
  name: "gpu-1",
  state: "ready",
  gpus: [0, 1, 2, 3].map((index) => ({ index, class: "h100", memoryBytes: 80 * 1024 ** 3, fabric: "nvl0", free: true })),
  memoryBytes: 256 * 1024 ** 3,
  cpuCores: 32,
};

describe.each(storesUnderTest)("changing a model's context and cards over $kind", (engine) => {
  let store: Store;
  let catalog: CatalogService;
  let changes: ModelChangeService;
  let drop: () => Promise<void>;
  let nodes: InventoryNode[];
  let facts: ModelFactsService;
  /** Where the planner's reader finds hf:// sources: a closed port unless a test starts a stand-in hub. */
  let hubEndpoint: string;

  beforeEach(async () => {
    const { location, drop: dropStore } = await engine.location();
    drop = dropStore;
    store = await openStore(location);
    catalog = new CatalogService(store, declared, "server.yaml");
    const fleet = new FleetService(store, catalog, { heartbeatDeadlineMs: 15_000, settlingWindowMs: 0, heartbeatIntervalMs: 2000, gpuMemoryUtilization: 0.9, serverEnvironment: process.env });
    // The planner's reader, except for the two fixture paths, whose facts are the fixtures' own.
    hubEndpoint = "http://127.0.0.1:9";
    const readFacts = async (source: string) => (source.startsWith("/models/qwen") ? fixtureFacts("Qwen2.5-7B-Instruct") : await readModelSource(source, { hubEndpoint }));
    facts = new ModelFactsService({ read: readFacts, store });
    const reconciler = new Reconciler(store, catalog, fleet, defaultReconcileSettings, { info: () => undefined, warn: () => undefined }, Date.now, facts);
    facts.whenFactsRead(() => reconciler.wake());
    const preview = (change: ChangeToPreview) => reconciler.preview(change, 0.9);
    const restarts = new RestartService({ store, catalog, fleet, facts, preview, wake: () => reconciler.wake() });
    nodes = [fourH100];
    changes = new ModelChangeService({ store, catalog, inventoryNodes: async () => nodes, restarts, preview, facts, gpuMemoryUtilization: 0.9 });
    await catalog.add(chat, operator);
  });
  afterEach(async () => {
    await store.close();
    await drop();
  });

  it("changes the context and the llama.cpp slots together, with an audit event and a reconciler event of before and after", async () => {
    const view = await changes.context("chat", { tokens: 16384, slots: 4 }, operator);
    expect(view.before).toEqual({ context: 8192, profiles: [{ name: "h100", engine: "vllm", gpus: 1, slots: 1 }, { name: "cpu", engine: "llamacpp", gpus: 0, slots: 2 }] });
    expect(view.after).toEqual({ context: 16384, profiles: [{ name: "h100", engine: "vllm", gpus: 1, slots: 1 }, { name: "cpu", engine: "llamacpp", gpus: 0, slots: 4 }] });
    expect(view.profiles[1]?.arguments).toEqual([
      { flag: "--ctx-size", before: "16384", after: "65536" },
      { flag: "--parallel", before: "2", after: "4" },
    ]);
    expect(view).toMatchObject({ replicas: 0, in_place: false, restart_before: expect.any(String) });
    const [audit] = await listAuditEvents(store.db, { model: "chat", limit: 1 });
    expect(audit).toMatchObject({ action: "model-context-changed", actor: "admin", actor_user: "alice", before: { context: 8192 }, after: { context: 16384 } });
    const kinds = (await listEvents(store.db, { model: "chat", limit: 10 })).map((event) => [event.kind, event.message]);
    expect(kinds).toEqual([
      ["model-context-changed", "admin (alice) changes chat: context 8192 → 16384 tokens, 4 slots per llama.cpp replica"],
      ["model-restarting", "admin (alice) restarts chat: 0 replicas to replace"],
    ]);
  });

  it("changes nothing and restarts nothing when the settings are already in force", async () => {
    const view = await changes.gpus("chat", { gpus: 1 }, operator);
    expect(view).toMatchObject({ replicas: 0, restart_before: null });
    expect(view.profiles.every((profile) => profile.arguments.length === 0)).toBe(true);
    expect((await listAuditEvents(store.db, { model: "chat", limit: 10 })).map((event) => event.action)).toEqual(["model-added"]);
  });

  it("sets the cards of a named profile", async () => {
    const view = await changes.gpus("chat", { gpus: 4, profile: "h100" }, operator);
    expect(view.profiles[0]?.arguments).toEqual([{ flag: "--tensor-parallel-size", before: "1", after: "4" }]);
    expect((await catalog.get("chat")).profiles[0]?.gpus).toBe(4);
  });

  it("refuses a model declared in server.yaml before reading its files", async () => {
    const error = await refusal(() => changes.context("pinned", { tokens: 8192 }, operator));
    expect(error.code).toBe("declared_in_file");
    expect(error.message).toBe('model "pinned" is declared in server.yaml; changing its context would be undone when the server next starts');
  });

  it("refuses a change it cannot check because the model's files cannot be read, naming what it cannot check and the flag, and changes nothing", async () => {
    await catalog.add({ name: "elsewhere", context: 4096, profiles: [{ engine: "vllm", source: path.join("/nonexistent", randomUUID()), gpu_class: "h100" }] }, operator);
    const cards = await refusal(() => changes.gpus("elsewhere", { gpus: 2 }, operator));
    expect(cards.code).toBe("change_unchecked");
    expect(cards.message).toMatch(
      /^cannot check 2 cards per replica for elsewhere\/vllm: its files cannot be read \(.*\), so llmgw cannot tell whether that many cards split the model's attention heads, and whether each card holds its share of the weights and KV cache; nothing was changed$/,
    );
    expect(cards.hint).toContain("--unchecked-memory");
    const context = await refusal(() => changes.context("elsewhere", { tokens: 32768 }, operator));
    expect(context.code).toBe("change_unchecked");
    expect(context.message).toContain("cannot check a 32768-token context for elsewhere/vllm: its files cannot be read");
    expect(context.message).toContain("whether it is within what the model was trained for, and whether its KV cache fits its cards beside the weights");
    const stored = await catalog.get("elsewhere");
    expect(stored.profiles[0]?.gpus).toBe(1);
    expect(stored.entry.context).toBe(4096);
  });

  it("changes a model whose files cannot be read when the risk is named with uncheckedMemory, and records the change", async () => {
    await catalog.add({ name: "elsewhere", context: 4096, profiles: [{ engine: "vllm", source: path.join("/nonexistent", randomUUID()), gpu_class: "h100" }] }, operator);
    const cards = await changes.gpus("elsewhere", { gpus: 2, uncheckedMemory: true }, operator);
    expect(cards.profiles[0]?.arguments).toEqual([{ flag: "--tensor-parallel-size", before: "1", after: "2" }]);
    const context = await changes.context("elsewhere", { tokens: 32768, uncheckedMemory: true }, operator);
    expect(context.after.context).toBe(32768);
    const stored = await catalog.get("elsewhere");
    expect(stored.profiles[0]?.gpus).toBe(2);
    expect(stored.entry.context).toBe(32768);
    expect((await listAuditEvents(store.db, { model: "elsewhere", limit: 10 })).map((event) => event.action)).toEqual(["model-context-changed", "model-gpus-changed", "model-added"]);
  });

  it("checks a change against the planner's figures kept from the files' last read once they cannot be read, and says so", async () => {
    const folder = temporaryDirectory("llmgw-kept-figures-");
    await writeSyntheticCheckpoint(folder, fixtureConfig("Qwen2.5-7B-Instruct"), checkpointTensors(fixtureArchitecture("Qwen2.5-7B-Instruct")), 2);
    const hub = await startHubServer({ repositories: { "example/qwen": folder } });
    const source = "hf://example/qwen@main";
    try {
      hubEndpoint = hub.url;
      await catalog.add({ name: "mirrored", context: 8192, profiles: [{ engine: "vllm", source, gpu_class: "h100" }] }, operator);
      // Once added, the server reads the model's files to price its cards (the reconciler's next pass asks): the figures are kept then.
      facts.get(source);
      expect((await facts.whenRead(source, 20_000))?.architecture.trainedContext).toBe(32768);
    } finally {
      await hub.close();
    }
    // One card of 20 GB: 8k and 16k tokens fit beside Qwen2.5-7B's 15.2 GB of weights, 32k does not.
    nodes = [{ ...fourH100, gpus: [{ index: 0, class: "h100", memoryBytes: 20e9, fabric: "nvl0", free: true }] }];
    const tooLarge = await refusal(() => changes.context("mirrored", { tokens: 32768 }, operator));
    expect(tooLarge.code).toBe("does_not_fit");
    expect(tooLarge.message).toContain("a 32768-token context does not fit the cards mirrored runs on");
    expect(tooLarge.message).toContain(`(checked against the planner's figures kept from the last read of ${source} as read at `);
    expect((await catalog.get("mirrored")).entry.context).toBe(8192);

    const view = await changes.context("mirrored", { tokens: 16384 }, operator);
    expect(view.after.context).toBe(16384);
    expect(view.stored_figures).toEqual([{ source, read_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/), unreadable: expect.stringContaining("example/qwen") }]);
    const [changed] = await listEvents(store.db, { model: "mirrored", kind: "model-context-changed", limit: 1 });
    expect(changed?.message).toMatch(/^admin \(alice\) changes mirrored: context 8192 → 16384 tokens \(checked against the planner's figures kept from the last read of hf:\/\/example\/qwen@main as read at .*: its files cannot be read now\)$/);
  });

  it("still refuses what it can check without the files when the risk is named: cards the fleet does not have", async () => {
    await catalog.add({ name: "elsewhere", profiles: [{ engine: "vllm", source: path.join("/nonexistent", randomUUID()), gpu_class: "h100" }] }, operator);
    nodes = [];
    const error = await refusal(() => changes.gpus("elsewhere", { gpus: 2, uncheckedMemory: true }, operator));
    expect(error.code).toBe("cards_missing");
    expect((await catalog.get("elsewhere")).profiles[0]?.gpus).toBe(1);
  });

  it("refuses cards when no node of the profile's class has joined", async () => {
    nodes = [];
    const error = await refusal(() => changes.gpus("chat", { gpus: 2 }, operator));
    expect(error.code).toBe("cards_missing");
    expect(error.message).toBe("no node of the fleet has h100 cards, so chat/h100 cannot be checked or placed on 2");
  });

  describe("over HTTP", () => {
    let app: FastifyInstance;
    const admin = newToken("admin");
    const post = (url: string, payload: unknown) => app.inject({ method: "POST", url, headers: { authorization: `Bearer ${admin}` }, payload: payload as Record<string, unknown> });

    beforeEach(async () => {
      await insertToken(store.db, { id: randomUUID(), name: "admin", role: "admin", hash: hashToken(admin) }, new Date().toISOString());
      app = await buildApp({ store, catalog, adminTokenHint: "see admin-token", registerMore: (routes) => registerModelChangeRoutes(routes, changes) });
    });
    afterEach(async () => {
      await app.close();
    });

    it("answers the change, and refuses a body it does not understand, naming the field", async () => {
      const done = await post("/api/v1/models/chat/context", { context: 12288 });
      expect(done.statusCode).toBe(200);
      expect(done.json()).toMatchObject({ model: "chat", change: "context", after: { context: 12288 } });
      const zero = await post("/api/v1/models/chat/context", { context: 0 });
      expect(zero.statusCode).toBe(400);
      expect(zero.json().error).toMatchObject({ code: "invalid_input", message: expect.stringContaining("context") });
      const misspelt = await post("/api/v1/models/chat/gpus", { gpu: 2 });
      expect(misspelt.statusCode).toBe(400);
      expect(misspelt.json().error.code).toBe("unknown_key");
      const heads = await post("/api/v1/models/chat/gpus", { gpus: 3 });
      expect(heads.statusCode).toBe(400);
      expect(heads.json().error.code).toBe("heads_not_divisible");
      const missing = await post("/api/v1/models/nothing/gpus", { gpus: 2 });
      expect(missing.statusCode).toBe(404);
    });
  });
});
