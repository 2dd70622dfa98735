import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";

/**
 * A fresh Postgres database for one test file, on the server that .ci/run
 * starts (LLMGW_TEST_POSTGRES_URL points at its `postgres` database). In CI a
 * missing server is a failure, never a silent skip: the contract suite must
 * run against both engines there.
 */
export const postgresAdminUrl = process.env.LLMGW_TEST_POSTGRES_URL;

if (!postgresAdminUrl && process.env.CI) {
  throw new Error("LLMGW_TEST_POSTGRES_URL is not set; .ci/run starts Postgres and sets it, so the Postgres contract tests cannot be skipped in CI");
}

export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  if (!postgresAdminUrl) throw new Error("LLMGW_TEST_POSTGRES_URL is not set");
  const name = `llmgw_test_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: postgresAdminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(postgresAdminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: postgresAdminUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

export interface StoreUnderTest {
  readonly kind: "sqlite" | "postgres";
  /** A fresh, empty store location, and how to throw it away. */
  location(): Promise<{ location: { database: string | undefined; dataDir: string }; drop: () => Promise<void> }>;
}

/**
 * The stores every contract suite runs against: embedded SQLite
 * always, and Postgres wherever LLMGW_TEST_POSTGRES_URL is set (always in CI).
 */
export const storesUnderTest: readonly StoreUnderTest[] = [
  {
    kind: "sqlite",
    location: async () => {
      const dataDir = mkdtempSync(path.join(tmpdir(), "llmgw-store-"));
      return { location: { database: undefined, dataDir }, drop: async () => rm(dataDir, { recursive: true, force: true }) };
    },
  },
  ...(postgresAdminUrl
    ? [
        {
          kind: "postgres" as const,
          location: async () => {
            const database = await createTestDatabase();
            const dataDir = mkdtempSync(path.join(tmpdir(), "llmgw-store-"));
            const drop = async () => {
              await database.drop();
              await rm(dataDir, { recursive: true, force: true });
            };
            return { location: { database: database.url, dataDir }, drop };
          },
        },
      ]
    : []),
];
