import { tmpdir } from "node:os";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { PlacedEntry } from "../catalog/build-catalog.js";
import type { ModelEntry } from "../catalog/schema.js";
import { refusal } from "../../test/support/refusal.js";
import { listAuditEvents } from "../store/audit-rows.js";
import { openStore, type Store } from "../store/open-store.js";
import { storesUnderTest } from "../../test/support/postgres.js";
import { CatalogService } from "./catalog-service.js";

/**
 * The store's contract suite: the same behaviour, run against
 * embedded SQLite and a real Postgres. Postgres runs wherever
 * LLMGW_TEST_POSTGRES_URL is set, which .ci/run always does.
 */
const engines = storesUnderTest;

const operator = { token: "admin", user: "alice" };
const declaredEntry: ModelEntry = { name: "declared-chat", profiles: [{ engine: "vllm", source: "https://mirror.example/d/" }] };
const declared: PlacedEntry[] = [{ entry: declaredEntry, source: "file", place: "server.yaml models[0] (declared-chat)" }];
const entry = (name: string, extra: Partial<ModelEntry> = {}): ModelEntry => ({
  name,
  profiles: [{ engine: "vllm", source: `https://mirror.example/${name}/` }],
  ...extra,
});


describe.each(engines)("catalog over $kind", (engine) => {
  let store: Store;
  let service: CatalogService;
  let location: { database: string | undefined; dataDir: string };
  let drop: () => Promise<void>;

  beforeEach(async () => {
    ({ location, drop } = await engine.location());
    store = await openStore(location);
    service = new CatalogService(store, declared, "server.yaml");
  });
  afterEach(async () => {
    await store.close();
    await drop();
  });

  it("keeps the built catalog while its revision stands, and sees another server's change at once", async () => {
    await service.add(entry("qwen"), operator);
    const first = await service.snapshot();
    expect(await service.snapshot()).toBe(first);
    // A second server on the same store (Postgres) or a second service in one process.
    const otherStore = await openStore(location);
    try {
      await new CatalogService(otherStore, declared, "server.yaml").add(entry("llama"), operator);
    } finally {
      await otherStore.close();
    }
    const next = await service.snapshot();
    expect(next.revision).toBeGreaterThan(first.revision);
    expect(next.catalog.models.map((model) => model.name)).toEqual(expect.arrayContaining(["qwen", "llama"]));
    expect((await service.get("llama")).name).toBe("llama");
  });

  it("keeps the revision of a refused change: nothing was built, nothing is rebuilt", async () => {
    await service.add(entry("qwen"), operator);
    const before = await service.snapshot();
    await refusal(() => service.add(entry("qwen"), operator));
    expect(await service.snapshot()).toBe(before);
  });

  it("keeps runtime models across a restart, beside the declared ones", async () => {
    await service.add(entry("qwen", { owner: "data-team" }), operator);
    await store.close();
    store = await openStore(location);
    service = new CatalogService(store, declared, "server.yaml");
    const models = await service.list();
    expect(models.map((model) => [model.name, model.source])).toEqual([
      ["declared-chat", "file"],
      ["qwen", "runtime"],
    ]);
    expect((await service.get("qwen")).entry.owner).toBe("data-team");
  });

  it("refuses to remove, scale or resize a declared model, saying to edit the file", async () => {
    for (const change of [
      () => service.remove("declared-chat", operator),
      () => service.scale("declared-chat", { min: 2 }, operator),
      () => service.resources("declared-chat", { memory_gb: 16 }, operator),
    ]) {
      const error = await refusal(change);
      expect(error.code).toBe("declared_in_file");
      expect(error.hint).toContain("Edit the entry for \"declared-chat\" in server.yaml");
    }
  });

  it("writes nothing, not even audit, when a change is refused", async () => {
    await service.add(entry("base"), operator);
    const before = await listAuditEvents(store.db, { limit: 100 });
    expect((await refusal(() => service.add(entry("broken", { fallbacks: ["ghost"] }), operator))).code).toBe("unknown_fallback");
    expect((await refusal(() => service.add(entry("base"), operator))).code).toBe("name_taken");
    expect((await refusal(() => service.add(entry("declared-chat"), operator))).code).toBe("name_taken");
    expect((await refusal(() => service.setFallbacks("base", ["base"], operator))).code).toBe("fallback_cycle");
    expect((await service.list()).map((model) => model.name)).toEqual(["declared-chat", "base"]);
    expect(await listAuditEvents(store.db, { limit: 100 })).toEqual(before);
    expect((await service.get("base")).fallbacks).toEqual([]);
  });

  it("lets exactly one of two simultaneous adds of a name win", async () => {
    const results = await Promise.allSettled([service.add(entry("twin"), operator), service.add(entry("twin", { owner: "b" }), operator)]);
    expect(results.filter((result) => result.status === "fulfilled")).toHaveLength(1);
    const rejected = results.find((result) => result.status === "rejected");
    expect((rejected as PromiseRejectedResult).reason).toMatchObject({ code: "name_taken" });
  });

  it("fills in the max when a new min passes it, and keeps a max that still holds", async () => {
    await service.add(entry("grow", { scaling: { min: 1, max: 2 } }), operator);
    expect((await service.scale("grow", { min: 3 }, operator)).scaling).toEqual({ min: 3, max: 3, idle_timeout: "10m" });
    expect((await service.scale("grow", { min: 0, max: 4, idle_timeout: "5m" }, operator)).scaling).toEqual({ min: 0, max: 4, idle_timeout: "5m" });
    expect((await service.scale("grow", { min: 1 }, operator)).scaling).toEqual({ min: 1, max: 4, idle_timeout: "5m" });
  });

  it("sets resources on the first profile or a named one, and refuses an unknown profile", async () => {
    await service.add(entry("res", { profiles: [{ engine: "vllm", source: "a" }, { engine: "llamacpp", source: "b.gguf" }] }), operator);
    const model = await service.resources("res", { profile: "llamacpp", memory_gb: 12, cpu_cores: 6 }, operator);
    expect(model.profiles[1]).toMatchObject({ name: "llamacpp", memory_gb: 12, cpu_cores: 6 });
    expect(model.profiles[0]?.memory_gb).toBeUndefined();
    const error = await refusal(() => service.resources("res", { profile: "gpu", memory_gb: 1 }, operator));
    expect(error.code).toBe("profile_not_found");
    expect(error.hint).toBe("Its profiles are: vllm, llamacpp.");
  });

  it("returns a model to its default class", async () => {
    await service.add(entry("odm", { scaling: { min: 0, max: 1 } }), operator);
    expect((await service.setClass("odm", "critical", operator)).class).toBe("critical");
    const model = await service.setClass("odm", "default", operator);
    expect([model.class, model.class_set]).toEqual(["opportunistic", false]);
  });

  it("refuses to remove a model that another falls back to, naming it", async () => {
    await service.add(entry("small"), operator);
    await service.add(entry("big", { fallbacks: ["small"] }), operator);
    const error = await refusal(() => service.remove("small", operator));
    expect(error.code).toBe("model_in_use");
    expect(error.message).toContain('model "small" is a fallback of big');
    await service.setFallbacks("big", [], operator);
    await service.remove("small", operator);
    expect((await service.list()).map((model) => model.name)).toEqual(["declared-chat", "big"]);
  });

  it("records who changed what, with the entry before and after", async () => {
    await service.add(entry("audited"), operator);
    await service.setOwner("audited", "ml-platform", { token: "ci-bot", user: null });
    await service.remove("audited", operator);
    const events = await listAuditEvents(store.db, { model: "audited", limit: 10 });
    expect(events.map((event) => [event.action, event.actor, event.actor_user])).toEqual([
      ["model-removed", "admin", "alice"],
      ["model-owner-changed", "ci-bot", null],
      ["model-added", "admin", "alice"],
    ]);
    expect(events[1]?.before).toEqual(entry("audited"));
    expect(events[1]?.after).toEqual(entry("audited", { owner: "ml-platform" }));
    expect(Date.parse(events[0]?.at ?? "")).not.toBeNaN();
  });
});

describe("store", () => {
  it("says which database it could not open and what to check", async () => {
    const error = await refusal(() => openStore({ database: "postgres://nobody:wrong@127.0.0.1:1/none", dataDir: tmpdir() }));
    expect(error.code).toBe("config_invalid");
    expect(error.message).toContain("cannot open the postgres database");
    expect(error.hint).toContain("Check that Postgres is running");
  });
});
