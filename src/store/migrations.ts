import { createHash } from "node:crypto";
import { sql, type Kysely, type Migration, type MigrationProvider } from "kysely";
import type { StoreKind } from "./schema.js";
import { dropFleetRevisionTriggers, dropNodeFabricNetworkTriggers, dropReplicaProgressTriggers, fleetRevisionTriggers, nodeFabricNetworkTriggers, replicaProgressTriggers } from "./revision-triggers.js";

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
    "0003_node_credential_hashes": {
      // Node credentials were stored in the clear, so a copy of the database (a backup, a 0644 file, a
      // Postgres dump) let anyone heartbeat as any node. Only their sha256 is kept now, the same hex
      // digest as every other token's hash (auth/tokens.ts hashToken), so upgraded agents keep working
      // with the credential they hold. The server proves itself to agents with a second secret derived
      // from a key outside the database (server/server-key.ts); this table holds a check of that key,
      // so a server started with another key refuses to start rather than be refused by every agent.
      async up(db: Kysely<unknown>) {
        await db.schema.alterTable("nodes").renameColumn("credential", "credential_hash").execute();
        const nodes = db as unknown as Kysely<{ nodes: { name: string; credential_hash: string } }>;
        for (const node of await nodes.selectFrom("nodes").select(["name", "credential_hash"]).execute()) {
          const hash = createHash("sha256").update(node.credential_hash).digest("hex");
          await nodes.updateTable("nodes").set({ credential_hash: hash }).where("name", "=", node.name).execute();
        }
        await db.schema
          .createTable("server_key_check")
          .addColumn("id", "integer", (column) => column.primaryKey())
          .addColumn("verifier", "text", (column) => column.notNull())
          .addColumn("created_at", "text", (column) => column.notNull())
          .execute();
      },
      async down(db: Kysely<unknown>) {
        // The clear credentials cannot be recovered: agents join again with a join token after a downgrade.
        await db.schema.dropTable("server_key_check").execute();
        await db.schema.alterTable("nodes").renameColumn("credential_hash", "credential").execute();
        },
      },
    "0004_gateway_keys_usage": {
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable("gateway_keys")
          .addColumn("id", "text", (column) => column.primaryKey())
          // Names stay taken after a revocation: usage is kept by key name, and
          // a new key under an old name would inherit the old key's history.
          .addColumn("name", "text", (column) => column.notNull().unique())
          .addColumn("key_hash", "text", (column) => column.notNull().unique())
          .addColumn("models", "text")
          .addColumn("rpm", "integer")
          .addColumn("tpm", "integer")
          .addColumn("expires_at", "text")
          .addColumn("created_at", "text", (column) => column.notNull())
          .addColumn("revoked_at", "text")
          .execute();
        await db.schema
          .createTable("usage")
          .addColumn("key", "text", (column) => column.notNull())
          .addColumn("model", "text", (column) => column.notNull())
          .addColumn("minute", "text", (column) => column.notNull())
          .addColumn("requests", "bigint", (column) => column.notNull())
          .addColumn("errors", "bigint", (column) => column.notNull())
          .addColumn("prompt_tokens", "bigint", (column) => column.notNull())
          .addColumn("completion_tokens", "bigint", (column) => column.notNull())
          .addPrimaryKeyConstraint("usage_key_model_minute", ["key", "model", "minute"])
          .execute();
        await db.schema.createIndex("usage_minute").on("usage").columns(["minute"]).execute();
      },
      async down(db: Kysely<unknown>) {
        for (const table of ["usage", "gateway_keys"]) await db.schema.dropTable(table).execute();
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
    "0007_model_versions": {
      // Each revision a model was moved to and from, and by whom: `ctl model
      // rollback` reads where to go back to from here, not from the audit's
      // free-form documents.
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable("model_versions")
          .addColumn("id", autoIncrementKey, (column) => (kind === "sqlite" ? column.primaryKey().autoIncrement() : column.primaryKey()))
          .addColumn("model", "text", (column) => column.notNull())
          .addColumn("from_revision", "text", (column) => column.notNull())
          .addColumn("to_revision", "text", (column) => column.notNull())
          .addColumn("kind", "text", (column) => column.notNull())
          .addColumn("actor", "text", (column) => column.notNull())
          .addColumn("actor_user", "text")
          .addColumn("at", "text", (column) => column.notNull())
          .execute();
        await db.schema.createIndex("model_versions_model").on("model_versions").columns(["model", "id"]).execute();
      },
      async down(db: Kysely<unknown>) {
        await db.schema.dropTable("model_versions").execute();
      },
    },
    "0008_canaries": {
      // One canary per model: the revision it tries, the share of traffic it
      // gets, the gate that promotes or aborts it by itself, and where it
      // stands. Replica intents learn their arm, so the reconciler, the
      // routing table and the views tell a canary replica from a stable one.
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable("canaries")
          .addColumn("model", "text", (column) => column.primaryKey())
          .addColumn("revision", "text", (column) => column.notNull())
          .addColumn("from_revision", "text")
          .addColumn("weight", "double precision", (column) => column.notNull())
          .addColumn("replicas", "integer", (column) => column.notNull())
          .addColumn("max_error_rate", "double precision")
          .addColumn("max_p95_ms", "integer")
          .addColumn("min_requests", "integer")
          .addColumn("window_ms", "integer")
          .addColumn("state", "text", (column) => column.notNull())
          .addColumn("decision", "text")
          .addColumn("started_at", "text", (column) => column.notNull())
          .addColumn("ended_at", "text")
          .addColumn("actor", "text", (column) => column.notNull())
          .addColumn("actor_user", "text")
          .addColumn("ended_by", "text")
          .execute();
        await db.schema.alterTable("replica_intents").addColumn("arm", "text").execute();
        // Per-arm counts each gateway reports, one row per gateway, model, arm and 5-second slot,
        // replaced by the gateway's later report of the same slot; kept an hour.
        await db.schema
          .createTable("arm_counts")
          .addColumn("gateway", "text", (column) => column.notNull())
          .addColumn("model", "text", (column) => column.notNull())
          .addColumn("arm", "text", (column) => column.notNull())
          .addColumn("slot_start", "text", (column) => column.notNull())
          .addColumn("requests", "integer", (column) => column.notNull())
          .addColumn("errors", "integer", (column) => column.notNull())
          .addColumn("latency", "text", (column) => column.notNull())
          .addPrimaryKeyConstraint("arm_counts_key", ["gateway", "model", "arm", "slot_start"])
          .execute();
      },
      async down(db: Kysely<unknown>) {
        await db.schema.dropTable("arm_counts").execute();
        await db.schema.alterTable("replica_intents").dropColumn("arm").execute();
        await db.schema.dropTable("canaries").execute();
      },
    },
    "0009_fleet_revision": {
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable("fleet_revision")
          .addColumn("id", "integer", (column) => column.primaryKey())
          .addColumn("revision", "integer", (column) => column.notNull())
          .execute();
        await db.insertInto("fleet_revision" as never).values({ id: 1, revision: 0 } as never).execute();
        for (const statement of fleetRevisionTriggers(kind)) await sql.raw(statement).execute(db);
      },
      async down(db: Kysely<unknown>) {
        for (const statement of dropFleetRevisionTriggers(kind)) await sql.raw(statement).execute(db);
        await db.schema.dropTable("fleet_revision").execute();
      },
    },
    "0010_gateway_key_max_in_flight": {
      // A key's own cap on requests in flight, for the key that needs more or
      // less than limits.requests_per_key (a batch job's, a trial's). Null, as
      // every key made before has it, keeps the server's cap.
      async up(db: Kysely<unknown>) {
        await db.schema.alterTable("gateway_keys").addColumn("max_in_flight", "integer").execute();
      },
      async down(db: Kysely<unknown>) {
        await db.schema.alterTable("gateway_keys").dropColumn("max_in_flight").execute();
      },
    },
    "0011_replica_progress": {
      // A fetch's progress in its own column, raising a revision of its own
      // (row 2 of fleet_revision): it moves at every beat of a fetching
      // replica and only the replica list shows it, so it must not make the
      // models, nodes and routing table, all keyed on row 1, be built again.
      // The update trigger of row 1 now compares the columns a view or a
      // decision reads; updated_at is left out (the console's change feed
      // reads it, and sees a progress write by it).
      async up(db: Kysely<unknown>) {
        await db.schema.alterTable("replicas").addColumn("progress", "text").execute();
        await db.insertInto("fleet_revision" as never).values({ id: 2, revision: 0 } as never).execute();
        for (const statement of replicaProgressTriggers(kind)) await sql.raw(statement).execute(db);
      },
      async down(db: Kysely<unknown>) {
        for (const statement of dropReplicaProgressTriggers(kind)) await sql.raw(statement).execute(db);
        await db.deleteFrom("fleet_revision" as never).where("id" as never, "=", 2 as never).execute();
        await db.schema.alterTable("replicas").dropColumn("progress").execute();
      },
    },
    "0012_source_facts": {
      // The planner's figures of each weights source, as last read from its
      // files (config.json or GGUF metadata, the weights' headers): a model
      // whose files become unreadable later (the hub out of reach, the mirror
      // gone) is still checked against them when its context or cards change.
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable("source_facts")
          .addColumn("source", "text", (column) => column.primaryKey())
          .addColumn("facts", "text", (column) => column.notNull())
          .addColumn("read_at", "text", (column) => column.notNull())
          .execute();
      },
      async down(db: Kysely<unknown>) {
        await db.schema.dropTable("source_facts").execute();
      },
    },
    "0013_node_fabric_network": {
      // Where a node is reached on its fabric and the interface that is on
      // (JSON `{address, interface}`, null when its agent reports none): the
      // members of a replica over several nodes meet at the leader's.
      async up(db: Kysely<unknown>) {
        await db.schema.alterTable("nodes").addColumn("fabric_network", "text").execute();
        for (const statement of nodeFabricNetworkTriggers(kind)) await sql.raw(statement).execute(db);
      },
      async down(db: Kysely<unknown>) {
        for (const statement of dropNodeFabricNetworkTriggers(kind)) await sql.raw(statement).execute(db);
        await db.schema.alterTable("nodes").dropColumn("fabric_network").execute();
      },
    },
  };
}

export function migrationProvider(kind: StoreKind): MigrationProvider {
  return { getMigrations: async () => migrations(kind) };
}
