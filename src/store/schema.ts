import type { ColumnType, Generated } from "kysely";

/**
 * The tables, as both SQLite and Postgres hold them. Times are ISO-8601 text
 * in UTC (sortable, and the same on both engines); JSON documents are text,
 * since SQLite has no JSON column type and we never query inside them.
 */
export interface Database {
  /** One row. Every catalog change updates it first, which serializes catalog changes across servers sharing Postgres. */
  catalog_revision: { id: number; revision: number };
  /** One row, raised by triggers on every change a fleet or model view shows (migrations.ts names the columns). */
  /** Row 1: every change a fleet view shows but a fetch's progress; row 2: progress, which only the replica list shows. */
  fleet_revision: { id: number; revision: number };
  models: { name: string; entry: string; created_at: string; updated_at: string };
  api_tokens: { id: string; name: string; role: string; token_hash: string; created_at: string };
  audit_events: {
    id: Generated<number>;
    at: string;
    actor: string;
    actor_user: string | null;
    action: string;
    model: string | null;
    before: string | null;
    after: string | null;
  };
  /** Join tokens for agents, stored hashed; any number of nodes may join with one. */
  join_tokens: { id: string; token_hash: string; created_at: string; created_by: string };
  /**
   * Joined nodes. Only the sha256 of each node's credential is kept: a copy
   * of the database must not let anyone heartbeat as a node. The secret the
   * server shows agents is derived from it with the server key, which is not
   * in the database.
   */
  nodes: {
    name: string;
    address: string;
    fabric: string;
    labels: string;
    inventory: string;
    credential_hash: string;
    joined_at: string;
    last_seen_at: string;
    /** JSON `{address, interface}` on the node's fabric; null when its agent reports none (absent on insert: null). */
    fabric_network: ColumnType<string | null, string | null | undefined, string | null>;
  };
  /** One row: an HMAC check of the server key, so a server holding another key refuses to start. */
  server_key_check: { id: number; verifier: string; created_at: string };
  /** Replicas as their agents last reported them, plus the spec the server sent. */
  replicas: {
    id: string;
    node: string;
    model: string;
    profile: string;
    engine: string;
    cards: string;
    spec: string | null;
    state: string;
    status: string;
    /** A fetch's progress as JSON, apart from the status: it raises a revision of its own (see migrations.ts). */
    progress: ColumnType<string | null, string | null | undefined, string | null>;
    stop_requested: number;
    created_at: string;
    updated_at: string;
  };
  /**
   * Gateway API keys, stored hashed like admin tokens but in their own table
   * with their own prefix, so neither kind ever opens the other's door.
   * `models` is a JSON array of names, or null for every model.
   */
  gateway_keys: {
    id: string;
    name: string;
    key_hash: string;
    models: string | null;
    rpm: number | null;
    tpm: number | null;
    /** Requests the key may have in flight at once; null (or absent on insert) for the gateway's limits.requests_per_key. */
    max_in_flight: ColumnType<number | null, number | null | undefined, number | null>;
    expires_at: string | null;
    created_at: string;
    revoked_at: string | null;
  };
  /**
   * Gateway usage per key, model and minute (`2026-11-30T17:42Z`), added to
   * in batches. Counts are bigint: Postgres hands them back as strings.
   */
  usage: {
    key: string;
    model: string;
    minute: string;
    requests: number | string;
    errors: number | string;
    prompt_tokens: number | string;
    completion_tokens: number | string;
  };
  /** One row: which server's reconciler may act, until when. The holder renews it; another takes it once it has expired. */
  reconcile_lease: { id: number; holder: string; expires_at: string };
  /**
   * What the reconciler (or an operator) meant for a replica, written before
   * the agent is called: `managed` replicas are the reconciler's to scale and
   * replace; `withdrawn_at` takes a replica out of routing before its engine
   * is told to drain.
   */
  replica_intents: {
    id: string;
    model: string;
    managed: number;
    placed_at: string;
    withdrawn_at: string | null;
    withdraw_reason: string | null;
    /** "canary" for a canary replica; null (or absent on insert) for a stable one. */
    arm: ColumnType<string | null, string | null | undefined, string | null>;
  };
  /** What the reconciler knows of a model beyond its entry: last demand, why it is not placed, its failures and backoff, a restart in progress. */
  model_status: {
    model: string;
    demand_at: string | null;
    placement_state: string | null;
    placement_reason: string | null;
    last_failure: string | null;
    last_failure_at: string | null;
    failures: number;
    backoff_until: string | null;
    restart_before: string | null;
    restart_in_place: number;
    updated_at: string;
  };
  /** What operators asked of a node: cordoned (nothing new placed there), draining (its replicas move away). */
  node_controls: { node: string; cordoned: number; draining: number; updated_at: string };
  /** The reconciler's actions and refusals, newest last, kept bounded. */
  /** A model's canary: started, then promoted or aborted (the row stays, for `ctl model canaries`, until the next canary). */
  canaries: {
    model: string;
    revision: string;
    from_revision: string | null;
    weight: number;
    replicas: number;
    max_error_rate: number | null;
    max_p95_ms: number | null;
    min_requests: number | null;
    window_ms: number | null;
    state: string;
    decision: string | null;
    started_at: string;
    ended_at: string | null;
    /** Who started it: the admin token's name, and the person at the terminal. */
    actor: string;
    actor_user: string | null;
    /** Who asked to promote or abort it (a token's name), or "gate" when its gate decided. */
    ended_by: string | null;
  };
  /** Requests, errors and a latency histogram (JSON array of counts) per gateway, model, arm and 5-second slot. */
  arm_counts: { gateway: string; model: string; arm: string; slot_start: string; requests: number; errors: number; latency: string };
  events: { id: Generated<number>; at: string; kind: string; model: string | null; replica: string | null; node: string | null; message: string };
  /** Each revision change of a model (update or rollback), oldest first by id. */
  model_versions: {
    id: Generated<number>;
    model: string;
    from_revision: string;
    to_revision: string;
    kind: string;
    actor: string;
    actor_user: string | null;
    at: string;
  };
  /** The planner's figures of a weights source (ModelFacts as JSON), as last read from its files. */
  source_facts: { source: string; facts: string; read_at: string };
}

export type StoreKind = "sqlite" | "postgres";
