import { closeSync, mkdirSync, openSync } from "node:fs";
import path from "node:path";
import SqliteDatabase from "better-sqlite3";
import { Kysely, Migrator, PostgresDialect, SqliteDialect, type Transaction } from "kysely";
import pg from "pg";
import { DomainError } from "../errors/light.js";
import { migrationProvider } from "./migrations.js";
import { cachingStatements } from "./statement-cache.js";
import type { Database, StoreKind } from "./schema.js";

export interface Store {
  readonly kind: StoreKind;
  readonly db: Kysely<Database>;
  /**
   * Runs `work` in one transaction that first takes the catalog's write lock.
   * Validation reads the catalog and the write depends on it, so two servers
   * (or two requests) changing the catalog at once must not interleave.
   */
  withCatalogLock<T>(work: (transaction: Transaction<Database>) => Promise<T>): Promise<T>;
  /**
   * A consistent copy of the whole state into `file` (created 0600: it holds
   * token hashes and usage) while the server goes on writing: SQLite's online
   * backup API. Postgres is refused with the pg_dump command that does the same.
   */
  backup(file: string): Promise<void>;
  close(): Promise<void>;
}

export interface StoreLocation {
  /** postgres:// URL; undefined for embedded SQLite. */
  readonly database: string | undefined;
  readonly dataDir: string;
}

export async function openStore(location: StoreLocation): Promise<Store> {
  const kind: StoreKind = location.database ? "postgres" : "sqlite";
  const sqlite = kind === "sqlite" ? openSqliteFile(location.dataDir) : undefined;
  const db = sqlite ? new Kysely<Database>({ dialect: new SqliteDialect({ database: cachingStatements(sqlite) }) }) : openPostgres(location.database as string);
  try {
    await migrate(db, kind);
  } catch (error) {
    await db.destroy();
    throw error;
  }
  return {
    kind,
    db,
    withCatalogLock: (work) =>
      db.transaction().execute(async (transaction) => {
        // An UPDATE takes Postgres' row lock and SQLite's write lock, on both engines before any read.
        await transaction.updateTable("catalog_revision").set((eb) => ({ revision: eb("revision", "+", 1) })).where("id", "=", 1).execute();
        return work(transaction);
      }),
    backup: async (file) => {
      if (!sqlite) throw pgDumpInstead(location.database as string);
      // SQLite's backup writes into an existing empty file as into a new database; made here, it is private from its first byte.
      closeSync(openSync(file, "wx", 0o600));
      await sqlite.backup(file);
    },
    close: () => db.destroy(),
  };
}

/**
 * The database at `location` as it is, migrations not run: for bringing a
 * store to an earlier schema (the tests that open every earlier schema with
 * this release).
 */
export function openUnmigrated(location: StoreLocation): Kysely<Database> {
  return location.database ? openPostgres(location.database) : new Kysely<Database>({ dialect: new SqliteDialect({ database: openSqliteFile(location.dataDir) }) });
}

function openSqliteFile(dataDir: string): SqliteDatabase.Database {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = path.join(dataDir, "llmgw.db");
  // SQLite would create it 0644 (the umask's default), readable by every local user; it creates its
  // -wal and -shm files with the database file's own mode, so creating this one 0600 covers all three.
  closeSync(openSync(file, "a", 0o600));
  const database = new SqliteDatabase(file);
  // WAL lets readers go on while a change is written; the busy timeout makes a
  // second process (a `ctl` reading the file, a backup) wait instead of failing.
  database.pragma("journal_mode = WAL");
  // NORMAL: in WAL mode a commit is not synced to disk by itself, only at checkpoints. better-sqlite3
  // blocks the event loop for each sync, and with FULL every heartbeat's commit cost about 6 ms here:
  // 500 nodes beating every 2 s took the whole loop, and the admin API waited seconds. The trade:
  // the last commits before a power loss or kernel crash may be rolled back (never after a crash of
  // llmgw itself), and the file is never corrupted. A server that must not lose them uses Postgres.
  database.pragma("synchronous = NORMAL");
  database.pragma("busy_timeout = 5000");
  database.pragma("foreign_keys = ON");
  return database;
}

/** The refusal of a backup on Postgres, with the commands that do it there; the password stays out of the command line. */
function pgDumpInstead(url: string): DomainError {
  let target = "DATABASE_URL";
  try {
    const parsed = new URL(url);
    const database = parsed.pathname.replace(/^\//, "") || "postgres";
    target = `-h ${parsed.hostname} -p ${parsed.port || "5432"} -U ${decodeURIComponent(parsed.username) || "postgres"} -d ${decodeURIComponent(database)}`;
  } catch {
    // An unparsable URL would not have opened; the placeholder still shows the command's shape.
  }
  return new DomainError(
    "backup_unsupported",
    "this server keeps its state in Postgres, which `llmgw ctl backup` does not copy (it copies the embedded SQLite file)",
    `Back it up with Postgres' own tool, online and consistent: \`pg_dump ${target} --format=custom --file=llmgw.dump\` (the password from PGPASSWORD or ~/.pgpass); restore into an empty database with \`pg_restore ${target} --no-owner llmgw.dump\`.`,
  );
}

function openPostgres(url: string): Kysely<Database> {
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  // An idle client that loses its connection emits 'error'; without a
  // listener that would crash the server instead of failing one query.
  pool.on("error", () => undefined);
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}

async function migrate(db: Kysely<Database>, kind: StoreKind): Promise<void> {
  const migrator = new Migrator({ db, provider: migrationProvider(kind) });
  let result;
  try {
    result = await migrator.migrateToLatest();
  } catch (error) {
    throw unreachable(kind, error);
  }
  if (result.error) {
    const failed = result.results?.find((migration) => migration.status === "Error");
    if (isConnectionError(result.error)) throw unreachable(kind, result.error);
    throw new DomainError(
      "config_invalid",
      `the ${kind} database could not be brought up to date${failed ? ` (migration ${failed.migrationName} failed)` : ""}: ${(result.error as Error).message}`,
      "Check that the database user may create tables; nothing was applied past the failed migration.",
    );
  }
}

function isConnectionError(error: unknown): boolean {
  const code = (error as { code?: string } | undefined)?.code;
  return code === "ECONNREFUSED" || code === "ENOTFOUND" || code === "28P01" || code === "3D000" || code === "ETIMEDOUT";
}

function unreachable(kind: StoreKind, error: unknown): DomainError {
  const reason = (error as Error).message;
  return new DomainError(
    "config_invalid",
    `cannot open the ${kind} database: ${reason}`,
    kind === "postgres"
      ? "Check that Postgres is running and that the URL's host, port, user, password and database are right (server.yaml `database:` or --database)."
      : "Check that the data directory is writable (--data-dir).",
  );
}
