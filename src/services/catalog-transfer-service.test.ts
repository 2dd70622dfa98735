import { mkdtempSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { storesUnderTest } from "../../test/support/postgres.js";
import type { ModelEntry } from "../catalog/schema.js";
import { openStore, type Store } from "../store/open-store.js";
import { insertVersionChange } from "../store/version-rows.js";
import { CatalogService } from "./catalog-service.js";
import { CatalogTransferService } from "./catalog-transfer-service.js";
import { GatewayKeyService } from "./gateway-key-service.js";
import { TokenService } from "./token-service.js";
import type { ExportedKey } from "../protocol/catalog-export.js";

const actor = { token: "admin", user: "ana" };
const external = { base_url: "http://127.0.0.1:9/v1" };
const chat: ModelEntry = { name: "chat", class: "critical", scaling: { min: 0, max: 2 }, aliases: ["chat-latest"], external };
const summary: ModelEntry = { name: "summary", fallbacks: ["chat"], external };

describe.each(storesUnderTest)("export and import between two stores ($kind)", (storeUnderTest) => {
  const drops: (() => Promise<void>)[] = [];
  const stores: Store[] = [];
  afterAll(async () => {
    for (const store of stores) await store.close();
    for (const drop of drops) await drop();
  });
  const fresh = async () => {
    const { location, drop } = await storeUnderTest.location();
    drops.push(drop);
    const store = await openStore(location);
    stores.push(store);
    const catalog = new CatalogService(store, [], "server.yaml");
    return { store, catalog, transfer: new CatalogTransferService(store, catalog), keys: new GatewayKeyService(store, catalog), tokens: new TokenService(store) };
  };

  it("carries models with their version history, keys and tokens; the second export equals the first", async () => {
    const source = await fresh();
    await source.catalog.add(chat, actor);
    await source.catalog.add(summary, actor);
    await insertVersionChange(source.store.db, { model: "chat", from: "a".repeat(40), to: "b".repeat(40), kind: "update", actor: "admin", actor_user: "ana", at: "2026-11-01T10:00:00.000Z" });
    await source.keys.create({ name: "data-team", models: ["chat-latest"], rpm: 10 }, actor);
    await source.keys.create({ name: "batch", max_in_flight: 1000 }, actor);
    await source.tokens.create("grafana", "read", actor);
    const exported = await source.transfer.export();
    expect(exported.versions).toHaveLength(1);
    // A key's own cap travels; a key without one says nothing, so the file stays readable by a release before per-key caps.
    expect(exported.keys.map((key) => [key.name, key.max_in_flight])).toEqual([
      ["batch", 1000],
      ["data-team", undefined],
    ]);
    expect(Object.keys(exported.keys[1] ?? {})).not.toContain("max_in_flight");

    const target = await fresh();
    const result = await target.transfer.import(exported, actor);
    expect(result.models.added).toEqual(["chat", "summary"]);
    expect(result.keys.created[0]?.key).toMatch(/^llmgw_key_/);
    expect(await target.transfer.export()).toEqual(exported);
    expect((await target.keys.list()).map((key) => [key.name, key.max_in_flight])).toEqual([
      ["batch", 1000],
      ["data-team", null],
    ]);
    // The same file again changes nothing; a null cap in a hand-written file means the server's, as an absent one does.
    const again = await target.transfer.import({ ...exported, keys: exported.keys.map((key) => ({ ...key, max_in_flight: key.max_in_flight ?? null })) }, actor);
    expect([again.keys.created, again.keys.unchanged]).toEqual([[], ["batch", "data-team"]]);
    // Another cap under a name taken here is a conflict, not a silent change.
    await expect(target.transfer.import({ ...exported, keys: [{ ...(exported.keys[0] as ExportedKey), max_in_flight: 4 }] }, actor)).rejects.toMatchObject({ code: "import_conflict", details: [{ where: "keys batch" }] });
  });

  it("writes nothing when one name of many collides, and refuses what the catalog would refuse", async () => {
    const target = await fresh();
    await target.tokens.create("grafana", "admin", actor);
    const document = { version: 1 as const, models: [chat], versions: [], keys: [], tokens: [{ name: "grafana", role: "read" as const }] };
    await expect(target.transfer.import(document, actor)).rejects.toMatchObject({ code: "import_conflict", details: [{ where: "tokens grafana" }] });
    expect(await target.catalog.list()).toEqual([]);
    // A fallback to a model neither side has: the catalog's own rule, before anything is written.
    await expect(target.transfer.import({ ...document, models: [summary], tokens: [] }, actor)).rejects.toMatchObject({ code: "unknown_fallback" });
    expect(await target.catalog.list()).toEqual([]);
    const dry = await target.transfer.previewImport({ ...document, tokens: [] });
    expect(dry.changes.map((change) => change.summary)).toEqual(["add the runtime model chat"]);
    expect(await target.catalog.list()).toEqual([]);
  });

  it(storeUnderTest.kind === "sqlite" ? "backs up to a private file a new store opens" : "refuses a backup with the pg_dump command that does one", async () => {
    const source = await fresh();
    await source.catalog.add(chat, actor);
    const folder = mkdtempSync(path.join(tmpdir(), "llmgw-backup-test-"));
    drops.push(() => rm(folder, { recursive: true, force: true }));
    const file = path.join(folder, "llmgw.db");
    if (storeUnderTest.kind === "postgres") {
      await expect(source.store.backup(file)).rejects.toMatchObject({ code: "backup_unsupported", hint: expect.stringMatching(/`pg_dump -h 127\.0\.0\.1 -p 5432 -U llmgw -d llmgw_test_\w+ --format=custom --file=llmgw\.dump`/) });
      return;
    }
    await source.store.backup(file);
    const copy = await openStore({ database: undefined, dataDir: folder });
    stores.push(copy);
    expect((await new CatalogService(copy, [], "server.yaml").list()).map((model) => model.name)).toEqual(["chat"]);
  });
});
