import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { storesUnderTest } from "../../test/support/postgres.js";
import type { CatalogModel } from "../catalog/catalog-model.js";
import { DomainError } from "../errors/domain-error.js";
import { replicaSpecSchema, type ReplicaSpec } from "../protocol/agent-protocol.js";
import type { ReplicaView, ReplicaViewState } from "../protocol/views.js";
import { listAuditEvents } from "../store/audit-rows.js";
import { openStore, type Store } from "../store/open-store.js";
import { AdapterService } from "./adapter-service.js";
import { CatalogService } from "./catalog-service.js";

const actor = { token: "admin", user: null };
let workspace: string;
const peft = (name: string) => join(workspace, name);

beforeAll(async () => {
  workspace = await mkdtemp(join(tmpdir(), "llmgw-adapter-service-"));
  for (const [name, rank] of [["sql", 8], ["legal", 8]] as const) {
    await mkdir(peft(name), { recursive: true });
    await writeFile(join(peft(name), "adapter_config.json"), JSON.stringify({ peft_type: "LORA", r: rank }));
  }
});

afterAll(async () => {
  await rm(workspace, { recursive: true, force: true });
});

/** A replica as the fleet lists it, started with `adapters` (vLLM then takes more while it runs). */
function replica(id: string, state: ReplicaViewState, adapters: string[]): { view: ReplicaView; spec: ReplicaSpec } {
  const view: ReplicaView = { id, model: "chat", profile: "default", node: "node-a", engine: "vllm", gpus: [0], state, endpoint: null, progress: null, reason: null, pid: 1, adopted: false, since: "", created_at: "", arm: "stable", llama_cpp: null, members: null };
  const spec = replicaSpecSchema.parse({ id, model: "chat", profile: "default", engine: "vllm", source: "hf://org/chat@main", cards: [0], adapters: adapters.map((name) => ({ name, source: peft(name) })) });
  return { view, spec };
}

describe.each(storesUnderTest)("adapters of a served model on $kind", (engine) => {
  let store: Store;
  let drop: () => Promise<void>;
  let catalog: CatalogService;
  let live: { view: ReplicaView; spec: ReplicaSpec }[];
  let calls: string[];
  let refusing: string | undefined;
  let restarts: string[];
  let noRoom: boolean;
  /** A replica that appears while the adapter loads, placed from the entry before it. */
  let latecomer: { view: ReplicaView; spec: ReplicaSpec } | undefined;
  let adapters: AdapterService;

  beforeEach(async () => {
    const fresh = await engine.location();
    drop = fresh.drop;
    store = await openStore(fresh.location);
    catalog = new CatalogService(store, [], "server.yaml");
    live = [];
    calls = [];
    refusing = undefined;
    restarts = [];
    noRoom = false;
    latecomer = undefined;
    const fleet = {
      liveReplicasWithSpecs: async () => live,
      changeAdapterOnReplica: async (id: string, change: { action: "load"; adapter: { name: string } } | { action: "unload"; name: string }) => {
        const name = change.action === "load" ? change.adapter.name : change.name;
        if (id === refusing && change.action === "load") throw new DomainError("adapter_load_failed", `replica ${id}: its vllm engine refused to load adapter ${name}`, "See its log.");
        calls.push(`${change.action} ${name} on ${id}`);
        if (latecomer !== undefined && !live.includes(latecomer)) live = [...live, latecomer];
      },
    };
    const requestRestart = async (model: CatalogModel, inPlace: boolean) => {
      if (noRoom) throw new DomainError("no_room", `no room to start a replica of ${model.name}`, "Use --in-place.");
      restarts.push(`${model.name}: ${(model.entry.adapters ?? []).map((adapter) => adapter.name).join(",")}`);
      return { restart_before: "2026-11-30T00:00:00.000Z", in_place: inPlace, replicas: live.length };
    };
    adapters = new AdapterService(store, catalog, fleet, requestRestart, () => ({}));
    await catalog.add({ name: "chat", adapters: [{ name: "sql", source: peft("sql") }], profiles: [{ engine: "vllm", source: "hf://org/chat@main", gpu_class: "h100", gpus: 1 }] }, actor);
  });

  afterEach(async () => {
    await store.close();
    await drop();
  });

  it("loads into every ready replica before the catalog names the adapter", async () => {
    live = [replica("r1", "ready", ["sql"]), replica("r2", "ready", ["sql"])];
    const answer = await adapters.add("chat", { name: "legal", source: peft("legal") }, false, actor);
    expect(answer).toMatchObject({ applied: "runtime", replicas_changed: ["r1", "r2"], restart_before: null, adapters: [{ name: "sql" }, { name: "legal" }] });
    expect(calls).toEqual(["load legal on r1", "load legal on r2"]);
    expect(restarts).toEqual([]);
    expect((await listAuditEvents(store.db, { model: "chat", limit: 1 }))[0]).toMatchObject({ action: "model-adapter-added", after: { adapters: [{ name: "sql" }, { name: "legal" }] } });
  });

  it("loads it into a replica that became ready meanwhile from the older entry", async () => {
    live = [replica("r1", "ready", ["sql"])];
    latecomer = replica("r2", "ready", ["sql"]);
    const answer = await adapters.add("chat", { name: "legal", source: peft("legal") }, false, actor);
    expect(calls).toEqual(["load legal on r1", "load legal on r2"]);
    expect(answer).toMatchObject({ applied: "runtime", replicas_changed: ["r1", "r2"], warnings: [] });
  });

  it("replaces the replicas by surge when one started meanwhile from the older entry is not ready yet", async () => {
    live = [replica("r1", "ready", ["sql"])];
    latecomer = replica("r2", "starting", ["sql"]);
    const answer = await adapters.add("chat", { name: "legal", source: peft("legal") }, false, actor);
    expect(restarts).toEqual(["chat: sql,legal"]);
    expect(answer.warnings).toEqual(["1 replica(s) started from the entry without legal are replaced by surge"]);
  });

  it("unloads it again from the replicas that took it when one refuses, and stores nothing", async () => {
    live = [replica("r1", "ready", ["sql"]), replica("r2", "ready", ["sql"])];
    refusing = "r2";
    await expect(adapters.add("chat", { name: "legal", source: peft("legal") }, false, actor)).rejects.toMatchObject({ code: "adapter_load_failed" });
    expect(calls).toEqual(["load legal on r1", "unload legal on r1"]);
    expect((await adapters.list("chat")).adapters.map((adapter) => adapter.name)).toEqual(["sql"]);
  });

  it("restarts by surge when an engine was started without LoRA or is still starting", async () => {
    live = [replica("r1", "ready", []), replica("r2", "starting", ["sql"])];
    const answer = await adapters.add("chat", { name: "legal", source: peft("legal") }, false, actor);
    expect(answer).toMatchObject({ applied: "restart", replicas: 2, restart_before: "2026-11-30T00:00:00.000Z", replicas_changed: [] });
    expect(restarts).toEqual(["chat: sql,legal"]);
    expect(calls).toEqual([]);
  });

  it("puts the adapters back when the surge has no room", async () => {
    live = [replica("r1", "ready", [])];
    noRoom = true;
    await expect(adapters.remove("chat", "sql", false, actor)).rejects.toMatchObject({ code: "no_room" });
    expect((await adapters.list("chat")).adapters.map((adapter) => adapter.name)).toEqual(["sql"]);
  });

  it("removes from the catalog first, then unloads from each running engine", async () => {
    live = [replica("r1", "ready", ["sql"])];
    const answer = await adapters.remove("chat", "sql", false, actor);
    expect(answer).toMatchObject({ change: "removed", applied: "runtime", replicas_changed: ["r1"], adapters: [] });
    expect(calls).toEqual(["unload sql on r1"]);
  });

  it("changes only the catalog when no replica runs", async () => {
    expect(await adapters.add("chat", { name: "legal", source: peft("legal") }, false, actor)).toMatchObject({ applied: "catalog", replicas_changed: [] });
  });

  it("refuses a scale on vLLM, an adapter it does not have, and a name already taken, before anything runs", async () => {
    live = [replica("r1", "ready", ["sql"])];
    await expect(adapters.add("chat", { name: "legal", source: peft("legal"), scale: 0.5 }, false, actor)).rejects.toMatchObject({
      code: "adapter_invalid",
      message: expect.stringContaining("a scale (@0.5) applies to llama.cpp only"),
    });
    await expect(adapters.remove("chat", "legal", false, actor)).rejects.toMatchObject({ code: "adapter_not_found", hint: "Its adapters: sql." });
    await expect(adapters.add("chat", { name: "chat", source: peft("legal") }, false, actor)).rejects.toMatchObject({ code: "name_taken" });
    expect(calls).toEqual([]);
  });
});
