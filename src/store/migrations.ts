import { type Kysely, type Migration, type MigrationProvider } from "kysely";
import type { StoreKind } from "./schema.js";

/**
 * One list of migrations for both engines. A migration is never edited after
 * it has shipped: add a new one. Where the two engines differ (auto-increment
 * keys), the migration asks which one it runs on.
 */
function migrations(kind: StoreKind): Record<string, Migration> {
  const autoIncrementKey = kind === "postgres" ? "serial" : "integer";
  return {
    "0001_catalog_tokens_audit": {
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable("catalog_revision")
          .addColumn("id", "integer", (column) => column.primaryKey())
          .addColumn("revision", "integer", (column) => column.notNull())
          .execute();
        await db.insertInto("catalog_revision" as never).values({ id: 1, revision: 0 } as never).execute();
        await db.schema
          .createTable("models")
          .addColumn("name", "text", (column) => column.primaryKey())
          .addColumn("entry", "text", (column) => column.notNull())
          .addColumn("created_at", "text", (column) => column.notNull())
          .addColumn("updated_at", "text", (column) => column.notNull())
          .execute();
        await db.schema
          .createTable("api_tokens")
          .addColumn("id", "text", (column) => column.primaryKey())
          .addColumn("name", "text", (column) => column.notNull().unique())
          .addColumn("role", "text", (column) => column.notNull())
          .addColumn("token_hash", "text", (column) => column.notNull().unique())
          .addColumn("created_at", "text", (column) => column.notNull())
          .execute();
        await db.schema
          .createTable("audit_events")
          .addColumn("id", autoIncrementKey, (column) => (kind === "sqlite" ? column.primaryKey().autoIncrement() : column.primaryKey()))
          .addColumn("at", "text", (column) => column.notNull())
          .addColumn("actor", "text", (column) => column.notNull())
          .addColumn("actor_user", "text")
          .addColumn("action", "text", (column) => column.notNull())
          .addColumn("model", "text")
          .addColumn("before", "text")
          .addColumn("after", "text")
          .execute();
        await db.schema.createIndex("audit_events_model").on("audit_events").columns(["model", "id"]).execute();
      },
      async down(db: Kysely<unknown>) {
        for (const table of ["audit_events", "api_tokens", "models", "catalog_revision"]) await db.schema.dropTable(table).execute();
      },
    },
    "0002_nodes_replicas": {
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable("join_tokens")
          .addColumn("id", "text", (column) => column.primaryKey())
          .addColumn("token_hash", "text", (column) => column.notNull().unique())
          .addColumn("created_at", "text", (column) => column.notNull())
          .addColumn("created_by", "text", (column) => column.notNull())
          .execute();
        await db.schema
          .createTable("nodes")
          .addColumn("name", "text", (column) => column.primaryKey())
          .addColumn("address", "text", (column) => column.notNull())
          .addColumn("fabric", "text", (column) => column.notNull())
          .addColumn("labels", "text", (column) => column.notNull())
          .addColumn("inventory", "text", (column) => column.notNull())
          .addColumn("credential", "text", (column) => column.notNull())
          .addColumn("joined_at", "text", (column) => column.notNull())
          .addColumn("last_seen_at", "text", (column) => column.notNull())
          .execute();
        await db.schema
          .createTable("replicas")
          .addColumn("id", "text", (column) => column.primaryKey())
          .addColumn("node", "text", (column) => column.notNull())
          .addColumn("model", "text", (column) => column.notNull())
          .addColumn("profile", "text", (column) => column.notNull())
          .addColumn("engine", "text", (column) => column.notNull())
          .addColumn("cards", "text", (column) => column.notNull())
          .addColumn("spec", "text")
          .addColumn("state", "text", (column) => column.notNull())
          .addColumn("status", "text", (column) => column.notNull())
          .addColumn("stop_requested", "integer", (column) => column.notNull().defaultTo(0))
          .addColumn("created_at", "text", (column) => column.notNull())
          .addColumn("updated_at", "text", (column) => column.notNull())
          .execute();
        await db.schema.createIndex("replicas_node").on("replicas").columns(["node"]).execute();
        await db.schema.createIndex("replicas_model").on("replicas").columns(["model"]).execute();
      },
      async down(db: Kysely<unknown>) {
        for (const table of ["replicas", "nodes", "join_tokens"]) await db.schema.dropTable(table).execute();
      },
    },
    "0005_reconcile": {
      // The reconciler's own tables, apart from the fleet's: what it meant to do
      // (replica intents), what it knows per model (demand, placement, failures),
      // what operators asked of nodes, the lease that lets one server act, and
      // the bounded event log.
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable("reconcile_lease")
          .addColumn("id", "integer", (column) => column.primaryKey())
          .addColumn("holder", "text", (column) => column.notNull())
          .addColumn("expires_at", "text", (column) => column.notNull())
          .execute();
        await db.insertInto("reconcile_lease" as never).values({ id: 1, holder: "", expires_at: new Date(0).toISOString() } as never).execute();
        await db.schema
          .createTable("replica_intents")
          .addColumn("id", "text", (column) => column.primaryKey())
          .addColumn("model", "text", (column) => column.notNull())
          .addColumn("managed", "integer", (column) => column.notNull())
          .addColumn("placed_at", "text", (column) => column.notNull())
          .addColumn("withdrawn_at", "text")
          .addColumn("withdraw_reason", "text")
          .execute();
        await db.schema
          .createTable("model_status")
          .addColumn("model", "text", (column) => column.primaryKey())
          .addColumn("demand_at", "text")
          .addColumn("placement_state", "text")
          .addColumn("placement_reason", "text")
          .addColumn("last_failure", "text")
          .addColumn("last_failure_at", "text")
          .addColumn("failures", "integer", (column) => column.notNull().defaultTo(0))
          .addColumn("backoff_until", "text")
          .addColumn("restart_before", "text")
          .addColumn("restart_in_place", "integer", (column) => column.notNull().defaultTo(0))
          .addColumn("updated_at", "text", (column) => column.notNull())
          .execute();
        await db.schema
          .createTable("node_controls")
          .addColumn("node", "text", (column) => column.primaryKey())
          .addColumn("cordoned", "integer", (column) => column.notNull())
          .addColumn("draining", "integer", (column) => column.notNull())
          .addColumn("updated_at", "text", (column) => column.notNull())
          .execute();
        await db.schema
          .createTable("events")
          .addColumn("id", autoIncrementKey, (column) => (kind === "sqlite" ? column.primaryKey().autoIncrement() : column.primaryKey()))
          .addColumn("at", "text", (column) => column.notNull())
          .addColumn("kind", "text", (column) => column.notNull())
          .addColumn("model", "text")
          .addColumn("replica", "text")
          .addColumn("node", "text")
          .addColumn("message", "text", (column) => column.notNull())
          .execute();
        await db.schema.createIndex("events_model").on("events").columns(["model", "id"]).execute();
      },
      async down(db: Kysely<unknown>) {
        for (const table of ["events", "node_controls", "model_status", "replica_intents", "reconcile_lease"]) await db.schema.dropTable(table).execute();
      },
    },
  };
}

export function migrationProvider(kind: StoreKind): MigrationProvider {
  return { getMigrations: async () => migrations(kind) };
}
