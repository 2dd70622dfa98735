import { createHash } from "node:crypto";
import { chmod, copyFile, mkdir, mkdtemp, readdir, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import SqliteDatabase from "better-sqlite3";
import { Kysely, Migrator, PostgresDialect, SqliteDialect } from "kysely";
import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Inventory } from "../protocol/agent-protocol.js";
import { refusal } from "../../test/support/refusal.js";
import { storesUnderTest, type StoreUnderTest } from "../../test/support/postgres.js";
import { migrationProvider } from "../store/migrations.js";
import { openStore, type Store } from "../store/open-store.js";
import { CatalogService } from "../services/catalog-service.js";
import { deriveControlSecret } from "../auth/control-secret.js";
import { FleetService } from "../services/fleet-service.js";
import { loadServerKey } from "./server-key.js";
import { startServer } from "./start-server.js";

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
const modeOf = async (file: string) => (await stat(file)).mode & 0o777;

const inventory: Inventory = {
  hostname: "host-a",
  gpus: [{ index: 0, uuid: "GPU-0", name: "NVIDIA L40S", class: "l40s", memory_bytes: 48 * 1024 ** 3, fabric: "node-a" }],
  memory_bytes: 64 * 1024 ** 3,
  cpu_cores: 16,
  engines: ["vllm"],
  disk_free_bytes: 10 ** 12,
  simulated: false,
};
const settings = { heartbeatDeadlineMs: 15_000, settlingWindowMs: 20_000, heartbeatIntervalMs: 2000, gpuMemoryUtilization: 0.9, serverEnvironment: process.env };

const temporary: string[] = [];
async function temporaryDirectory(): Promise<string> {
  const directory = await mkdtemp(path.join(os.tmpdir(), "llmgw-secrets-"));
  temporary.push(directory);
  return directory;
}
afterEach(async () => {
  for (const directory of temporary.splice(0)) await rm(directory, { recursive: true, force: true });
});

describe("the server's files", () => {
  it("creates its data directory 0700 and the database (with its WAL), admin token and server key 0600", async () => {
    const dataDir = path.join(await temporaryDirectory(), "data");
    const server = await startServer({ dataDir, listen: "127.0.0.1:0", logger: false });
    try {
      expect(server.warnings).toEqual([]);
      expect(await modeOf(dataDir)).toBe(0o700);
      const files = await readdir(dataDir);
      expect(files).toEqual(expect.arrayContaining(["llmgw.db", "llmgw.db-wal", "llmgw.db-shm", "admin-token", "server-key"]));
      // The usage journal's folder is private as the data directory is, and so are its segments.
      const journal = path.join(dataDir, "usage-journal");
      for (const file of files) expect([file, await modeOf(path.join(dataDir, file))]).toEqual([file, path.join(dataDir, file) === journal ? 0o700 : 0o600]);
      for (const file of await readdir(journal)) expect([file, await modeOf(path.join(journal, file))]).toEqual([file, 0o600]);
    } finally {
      await server.close();
    }
  });

  it("says so at start, with the chmod to run, when its data directory or database is open to others, and changes neither", async () => {
    const dataDir = path.join(await temporaryDirectory(), "data");
    await mkdir(dataDir);
    await chmod(dataDir, 0o755);
    await writeFile(path.join(dataDir, "llmgw.db"), "");
    await chmod(path.join(dataDir, "llmgw.db"), 0o644);
    const server = await startServer({ dataDir, listen: "127.0.0.1:0", logger: false });
    try {
      expect(server.warnings).toEqual([
        `${dataDir} is open to other users of this machine (mode 0755), and it holds secrets; close it with: chmod 700 ${dataDir}`,
        `${path.join(dataDir, "llmgw.db")} is readable by other users of this machine (mode 0644), and it holds a secret; close it with: chmod 600 ${path.join(dataDir, "llmgw.db")}`,
      ]);
      expect(await modeOf(dataDir)).toBe(0o755);
      expect(await modeOf(path.join(dataDir, "llmgw.db"))).toBe(0o644);
    } finally {
      await server.close();
    }
  });
});

describe.each(storesUnderTest)("node secrets over $kind", (engine: StoreUnderTest) => {
  let store: Store;
  let drop: () => Promise<void>;
  let dataDir: string;

  beforeEach(async () => {
    const { location, drop: dropDatabase } = await engine.location();
    drop = dropDatabase;
    dataDir = location.dataDir;
    temporary.push(dataDir);
    store = await openStore(location);
  });
  afterEach(async () => {
    await store.close();
    await drop();
  });

  async function joined(fleet: FleetService, name = "node-a") {
    const { token } = await fleet.createJoinToken("admin");
    return await fleet.join({ protocol: 1, join_token: token, name, address: "http://10.0.0.5:7070", fabric: name, labels: {}, inventory });
  }
  const beat = (fleet: FleetService, credential: string, extra: Record<string, unknown> = {}) =>
    fleet.heartbeat(`Bearer ${credential}`, { protocol: 1, name: "node-a", address: "http://10.0.0.5:7070", replicas: [], ...extra });

  it("stores only a hash of the node credential: the stolen row does not authenticate a heartbeat", async () => {
    const fleet = new FleetService(store, new CatalogService(store, [], "server.yaml"), settings);
    const { credential, control_secret } = await joined(fleet);
    const row = await store.db.selectFrom("nodes").selectAll().where("name", "=", "node-a").executeTakeFirstOrThrow();
    expect(row.credential_hash).toBe(sha256(credential));
    expect(JSON.stringify(row)).not.toContain(credential);
    expect(JSON.stringify(row)).not.toContain(control_secret as string);
    expect((await refusal(() => beat(fleet, row.credential_hash))).code).toBe("unauthorized");
    expect(await beat(fleet, credential)).toMatchObject({ protocol: 1 });
  });

  it("gives the agent a control secret derived with the server key, and again in a heartbeat answer when the agent's hash of it is stale", async () => {
    const { key } = await loadServerKey(store, dataDir);
    const fleet = new FleetService(store, new CatalogService(store, [], "server.yaml"), { ...settings, serverKey: key });
    const { credential, control_secret } = await joined(fleet);
    expect(control_secret).toBe(deriveControlSecret(key, sha256(credential)));
    expect(await beat(fleet, credential, { control_secret_hash: sha256(control_secret as string) })).toEqual({ protocol: 1 });
    expect(await beat(fleet, credential)).toEqual({ protocol: 1, control_secret });
    expect(await beat(fleet, credential, { control_secret_hash: sha256("an old one") })).toEqual({ protocol: 1, control_secret });
    // A new join is a new credential, so a new control secret: the old one commands nothing.
    await store.db.updateTable("nodes").set({ last_seen_at: new Date(0).toISOString() }).execute();
    const again = await joined(fleet);
    expect(again.control_secret).not.toBe(control_secret);
  });

  it("keeps one server key per database: a server with another key, or none, refuses to start, naming the file to copy", async () => {
    const first = await loadServerKey(store, dataDir);
    expect(await modeOf(first.file)).toBe(0o600);
    expect((await loadServerKey(store, dataDir)).key.equals(first.key)).toBe(true);
    const otherDir = await temporaryDirectory();
    const missing = await refusal(() => loadServerKey(store, otherDir));
    expect(missing).toMatchObject({ code: "config_invalid", message: expect.stringContaining(`${path.join(otherDir, "server-key")} is missing`) });
    expect(missing.hint).toContain(`Copy server-key from the data directory of a server already using this database to ${path.join(otherDir, "server-key")}`);
    await writeFile(path.join(otherDir, "server-key"), `${"ab".repeat(32)}\n`);
    expect((await refusal(() => loadServerKey(store, otherDir))).message).toContain("differs from it");
    await writeFile(path.join(otherDir, "server-key"), "not a key\n");
    expect((await refusal(() => loadServerKey(store, otherDir))).message).toContain("is not a server key (64 hexadecimal digits)");
    await copyFile(first.file, path.join(otherDir, "server-key"));
    expect((await loadServerKey(store, otherDir)).key.equals(first.key)).toBe(true);
  });

  it("takes the key from LLMGW_SERVER_KEY in place of the file, for servers whose data directory does not persist", async () => {
    const first = await loadServerKey(store, dataDir);
    const ephemeral = await temporaryDirectory();
    const wrong = await refusal(() => loadServerKey(store, ephemeral, "cd".repeat(32)));
    expect(wrong).toMatchObject({ message: expect.stringContaining("LLMGW_SERVER_KEY differs from it"), hint: expect.stringContaining("Set LLMGW_SERVER_KEY to the key of a server already using this database") });
    const fromEnvironment = await loadServerKey(store, ephemeral, first.key.toString("hex"));
    expect(fromEnvironment.key.equals(first.key)).toBe(true);
    expect(await readdir(ephemeral)).toEqual([]);
  });
});

describe.each(storesUnderTest)("the upgrade of clear node credentials over $kind", (engine: StoreUnderTest) => {
  it("hashes each stored credential, so the agents of an upgraded fleet keep their heartbeats", async () => {
    const { location, drop } = await engine.location();
    temporary.push(location.dataDir);
    const db =
      location.database === undefined
        ? new Kysely<unknown>({ dialect: new SqliteDialect({ database: new SqliteDatabase(path.join(location.dataDir, "llmgw.db")) }) })
        : new Kysely<unknown>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: location.database }) }) });
    const clear = "llmgw_node_issued-before-hashing-0123456789";
    try {
      const migrated = await new Migrator({ db, provider: migrationProvider(engine.kind) }).migrateTo("0002_nodes_replicas");
      expect(migrated.error).toBeUndefined();
      const at = new Date().toISOString();
      await db
        .insertInto("nodes" as never)
        .values({ name: "node-a", address: "http://10.0.0.5:7070", fabric: "node-a", labels: "{}", inventory: JSON.stringify(inventory), credential: clear, joined_at: at, last_seen_at: at } as never)
        .execute();
    } finally {
      await db.destroy();
    }
    const store = await openStore(location);
    try {
      const row = await store.db.selectFrom("nodes").selectAll().executeTakeFirstOrThrow();
      expect(row.credential_hash).toBe(sha256(clear));
      const fleet = new FleetService(store, new CatalogService(store, [], "server.yaml"), settings);
      const answer = await fleet.heartbeat(`Bearer ${clear}`, { protocol: 1, name: "node-a", address: "http://10.0.0.5:7070", replicas: [] });
      // The upgraded agent learns the control secret it should now expect.
      expect(answer.control_secret).toMatch(/^llmgw_control_/);
    } finally {
      await store.close();
      await drop();
    }
  });
});

