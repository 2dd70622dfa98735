import { sql, type Kysely } from "kysely";
import type { Database } from "./schema.js";

/**
 * One short text per collection the console follows, that changes whenever
 * the collection does: counts and the newest timestamps or ids, read in one
 * query of index-only aggregates. Comparing them is how a server learns of
 * changes another server sharing the database made, without a table of its own.
 */
export interface ChangeSignatures {
  readonly nodes: string;
  readonly models: string;
  readonly replicas: string;
  readonly keys: string;
  readonly canaries: string;
  readonly audit: string;
  /** The newest event's id (0 with none): new rows are read after it. */
  readonly lastEventId: number;
}

type Cell = string | number | bigint | null;

export async function readChangeSignatures(db: Kysely<Database>): Promise<ChangeSignatures> {
  // Written once in SQL both SQLite and Postgres read alike; each subquery is an aggregate over one table.
  const result = await sql<Record<string, Cell>>`
    select
      (select count(*) from nodes) as nodes_count,
      (select max(last_seen_at) from nodes) as nodes_seen,
      (select max(joined_at) from nodes) as nodes_joined,
      (select max(updated_at) from node_controls) as controls_updated,
      (select revision from catalog_revision where id = 1) as catalog_revision,
      (select count(*) from model_status) as status_count,
      (select max(updated_at) from model_status) as status_updated,
      (select count(*) from replicas) as replicas_count,
      (select max(updated_at) from replicas) as replicas_updated,
      (select count(*) from replica_intents) as intents_count,
      (select count(withdrawn_at) from replica_intents) as intents_withdrawn,
      (select count(*) from gateway_keys) as keys_count,
      (select count(revoked_at) from gateway_keys) as keys_revoked,
      (select count(*) from canaries) as canaries_count,
      (select max(started_at) from canaries) as canaries_started,
      (select max(ended_at) from canaries) as canaries_ended,
      (select sum(weight) from canaries) as canaries_weight,
      (select max(id) from audit_events) as audit_id,
      (select max(id) from events) as event_id
  `.execute(db);
  const row = result.rows[0] ?? {};
  const join = (...names: string[]) => names.map((name) => String(row[name] ?? "")).join("|");
  return {
    nodes: join("nodes_count", "nodes_seen", "nodes_joined", "controls_updated"),
    models: join("catalog_revision", "status_count", "status_updated"),
    replicas: join("replicas_count", "replicas_updated", "intents_count", "intents_withdrawn"),
    keys: join("keys_count", "keys_revoked"),
    canaries: join("canaries_count", "canaries_started", "canaries_ended", "canaries_weight"),
    audit: join("audit_id"),
    lastEventId: Number(row.event_id ?? 0),
  };
}
