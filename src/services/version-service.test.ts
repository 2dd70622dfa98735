import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { storesUnderTest } from "../../test/support/postgres.js";
import type { CatalogModel } from "../catalog/catalog-model.js";
import type { ModelEntry } from "../catalog/schema.js";
import { DomainError } from "../errors/domain-error.js";
import { checkpointTensors, writeSyntheticCheckpoint } from "../plan/header-only-checkpoint.js";
import { fixtureArchitecture, fixtureConfig } from "../plan/testing/fixtures.js";
import { startHubServer, type HubServer } from "../hub/local-hub.js";
import { listAuditEvents } from "../store/audit-rows.js";
import { openStore, type Store } from "../store/open-store.js";
import { listEvents } from "../store/reconcile-rows.js";
import { CatalogService } from "./catalog-service.js";
import { VersionService } from "./version-service.js";

const first = "1111111aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const second = "2222222bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
/** A commit whose files hold no weights: the source check must refuse moving to it. */
const broken = "3333333ccccccccccccccccccccccccccccccccc";
const actor = { token: "admin", user: "alice" };

let workspace: string;
let hub: HubServer;

beforeAll(async () => {
  workspace = await mkdtemp(join(tmpdir(), "llmgw-versions-"));
  await writeSyntheticCheckpoint(join(workspace, "qwen"), fixtureConfig("Qwen2.5-7B-Instruct"), checkpointTensors(fixtureArchitecture("Qwen2.5-7B-Instruct")), 2);
  await mkdir(join(workspace, "empty"), { recursive: true });
  await writeFile(join(workspace, "empty", "README.md"), "weights coming soon");
  const folder = join(workspace, "qwen");
  hub = await startHubServer({
    repositories: { "example/qwen": { commits: { [first]: folder, [second]: folder, [broken]: join(workspace, "empty") }, branches: { main: second } } },
  });
});

afterAll(async () => {
  await hub.close();
  await rm(workspace, { recursive: true, force: true });
});

const chat = (revision: string): ModelEntry => ({
  name: "chat",
  origin: `hf://example/qwen@${revision}`,
  profiles: [{ engine: "vllm", source: `hf://example/qwen@${revision}`, gpu_class: "h100", gpus: 1 }],
});

describe.each(storesUnderTest)("model versions on $kind", (engine) => {
  let store: Store;
  let drop: () => Promise<void>;
  let catalog: CatalogService;
  let restarts: { model: string; source: string | undefined; inPlace: boolean }[];
  let noRoom: boolean;
  let versions: VersionService;

  beforeEach(async () => {
    const fresh = await engine.location();
    drop = fresh.drop;
    store = await openStore(fresh.location);
    catalog = new CatalogService(store, [{ entry: { ...chat(first), name: "declared" }, source: "file", place: "server.yaml: models[0]" }], "server.yaml");
    restarts = [];
    noRoom = false;
    // The reconciler's surge restart, recorded: what matters here is what the catalog holds when it is asked.
    const requestRestart = async (model: CatalogModel, inPlace: boolean) => {
      if (noRoom) throw new DomainError("no_room", `no room to start a replica of ${model.name} beside the ones it replaces`, "Run with --in-place.");
      restarts.push({ model: model.name, source: model.profiles[0]?.source, inPlace });
      return { restart_before: new Date().toISOString(), in_place: inPlace, replicas: 1 };
    };
    versions = new VersionService(store, catalog, requestRestart, () => ({ hubEndpoint: hub.url }));
    await catalog.add(chat(first.slice(0, 7)), actor);
  });

  afterEach(async () => {
    await store.close();
    await drop();
  });

  it("lists a model whose branch has a newer commit than the one it runs", async () => {
    expect(await versions.updates()).toEqual([
      { model: "declared", repository: "example/qwen", revision: first, branch: "main", latest: second, update_available: true, error: null },
      { model: "chat", repository: "example/qwen", revision: first.slice(0, 7), branch: "main", latest: second, update_available: true, error: null },
    ]);
  });

  it("updates to the branch's head by a surge restart, and records the move with who made it", async () => {
    const rollout = await versions.update("chat", undefined, false, actor);
    expect(rollout).toMatchObject({ model: "chat", kind: "update", from: first.slice(0, 7), to: second, changed: true, replicas: 1 });
    expect(restarts).toEqual([{ model: "chat", source: `hf://example/qwen@${second}`, inPlace: false }]);
    expect((await catalog.get("chat")).entry.origin).toBe(`hf://example/qwen@${second}`);
    expect((await versions.history("chat")).changes).toMatchObject([{ kind: "update", from: first.slice(0, 7), to: second, actor: "admin", actor_user: "alice" }]);
    const audit = await listAuditEvents(store.db, { model: "chat", limit: 1 });
    expect(audit[0]).toMatchObject({ action: "model-updated", before: { origin: `hf://example/qwen@${first.slice(0, 7)}` }, after: { origin: `hf://example/qwen@${second}` } });
    expect((await listEvents(store.db, { model: "chat", limit: 10 })).map((event) => event.kind)).toContain("model-updating");
    expect((await versions.updates()).find((row) => row.model === "chat")?.update_available).toBe(false);
  });

  it("rolls back to the revision before the last update, and says when there is none", async () => {
    await expect(versions.rollback("chat", false, actor)).rejects.toMatchObject({ code: "no_previous_revision" });
    await versions.update("chat", second, false, actor);
    const back = await versions.rollback("chat", true, actor);
    expect(back).toMatchObject({ kind: "rollback", from: second, to: first, in_place: true });
    expect((await catalog.get("chat")).profiles[0]?.source).toBe(`hf://example/qwen@${first}`);
    expect((await versions.history("chat")).changes.map((change) => [change.kind, change.from, change.to])).toEqual([
      ["update", first.slice(0, 7), second],
      ["rollback", second, first],
    ]);
  });

  it("refuses a revision the hub does not have, and one whose files hold no weights, changing nothing", async () => {
    await expect(versions.update("chat", "no-such-branch", false, actor)).rejects.toMatchObject({ code: "revision_not_found", message: expect.stringContaining("no revision no-such-branch") });
    await expect(versions.update("chat", broken, false, actor)).rejects.toMatchObject({ code: "source_unreadable" });
    expect(restarts).toEqual([]);
    expect((await versions.history("chat")).changes).toEqual([]);
    expect((await catalog.get("chat")).entry.origin).toBe(`hf://example/qwen@${first.slice(0, 7)}`);
  });

  it("puts the revision back when the surge has no room, so the catalog names what runs", async () => {
    noRoom = true;
    await expect(versions.update("chat", undefined, false, actor)).rejects.toMatchObject({ code: "no_room" });
    expect((await catalog.get("chat")).entry.origin).toBe(`hf://example/qwen@${first.slice(0, 7)}`);
    expect((await versions.history("chat")).changes).toEqual([]);
  });

  it("refuses to move a model declared in server.yaml, and one that follows no repository", async () => {
    await expect(versions.update("declared", undefined, false, actor)).rejects.toMatchObject({ code: "declared_in_file" });
    await catalog.add({ name: "local", profiles: [{ engine: "llamacpp", source: "/models/local.gguf" }] }, actor);
    await expect(versions.update("local", undefined, false, actor)).rejects.toMatchObject({ code: "revision_not_found", message: expect.stringContaining("follows no hub repository") });
  });

  it("shows and sets the origin", async () => {
    expect(await versions.origin("chat")).toEqual({ model: "chat", origin: `hf://example/qwen@${first.slice(0, 7)}`, repository: "example/qwen", revision: first.slice(0, 7) });
    const set = await versions.setOrigin("chat", `hf://example/qwen@${second}`, actor);
    expect(set.revision).toBe(second);
  });
});
