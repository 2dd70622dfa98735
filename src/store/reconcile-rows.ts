import type { Insertable, Kysely, Selectable } from "kysely";
import type { Database } from "./schema.js";
import { likePattern } from "./like-pattern.js";
import type { EventKind } from "../protocol/index.js";

export type ReplicaIntentRow = Selectable<Database["replica_intents"]>;
export type NewReplicaIntent = Insertable<Database["replica_intents"]>;
export type ModelStatusRow = Database["model_status"];
export type NodeControlRow = Database["node_controls"];
export type EventRow = Omit<Database["events"], "id"> & { id: number };
/** An event to record: its kind one of the documented list, which the type keeps complete. */
export type NewEvent = Omit<Database["events"], "id" | "kind"> & { kind: EventKind };

/**
 * Takes or renews the reconciler's lease in one UPDATE: it succeeds for the
 * holder, or for anyone once the lease has expired. One statement, so two
 * servers asking at once cannot both win.
 */
export async function holdLease(db: Kysely<Database>, holder: string, nowIso: string, expiresIso: string): Promise<boolean> {
  const result = await db
    .updateTable("reconcile_lease")
    .set({ holder, expires_at: expiresIso })
    .where("id", "=", 1)
    .where((eb) => eb.or([eb("holder", "=", holder), eb("expires_at", "<", nowIso)]))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Gives the lease up at a clean stop, so another server need not wait for it to expire. */
export async function releaseLease(db: Kysely<Database>, holder: string): Promise<void> {
  await db.updateTable("reconcile_lease").set({ expires_at: new Date(0).toISOString() }).where("id", "=", 1).where("holder", "=", holder).execute();
}

export async function readLease(db: Kysely<Database>): Promise<{ holder: string; expires_at: string } | undefined> {
  return await db.selectFrom("reconcile_lease").select(["holder", "expires_at"]).where("id", "=", 1).executeTakeFirst();
}

export async function insertEvents(db: Kysely<Database>, events: readonly NewEvent[]): Promise<void> {
  if (events.length === 0) return;
  await db.insertInto("events").values([...events]).execute();
}

export interface EventFilter {
  readonly model?: string | undefined;
  readonly node?: string | undefined;
  readonly kind?: string | undefined;
  /** Text the message, model, node or replica holds, in any case. */
  readonly text?: string | undefined;
  /** Events after this id. */
  readonly afterId?: number | undefined;
  /** Events before this id (the page before one already read). */
  readonly beforeId?: number | undefined;
  /** Events at or after this time. */
  readonly since?: string | undefined;
  readonly limit: number;
}

/** The newest `limit` events that match, oldest first (the order they are read in). */
export async function listEvents(db: Kysely<Database>, filter: EventFilter): Promise<EventRow[]> {
  let query = db.selectFrom("events").selectAll();
  if (filter.model !== undefined) query = query.where("model", "=", filter.model);
  if (filter.node !== undefined) query = query.where("node", "=", filter.node);
  if (filter.kind !== undefined) query = query.where("kind", "=", filter.kind);
  if (filter.text !== undefined) {
    const pattern = likePattern(filter.text);
    query = query.where((eb) => eb.or(["message", "model", "node", "replica"].map((column) => eb(eb.fn("lower", [eb.ref(column as "message")]), "like", pattern))));
  }
  if (filter.afterId !== undefined) query = query.where("id", ">", filter.afterId);
  if (filter.beforeId !== undefined) query = query.where("id", "<", filter.beforeId);
  if (filter.since !== undefined) query = query.where("at", ">=", filter.since);
  const rows = await query.orderBy("id", "desc").limit(filter.limit).execute();
  return rows.map((row) => ({ ...row, id: Number(row.id) })).reverse();
}

/** Keeps the newest `keep` events; the log must not grow without end on a fleet that churns. */
export async function trimEvents(db: Kysely<Database>, keep: number): Promise<void> {
  const newest = await db.selectFrom("events").select((eb) => eb.fn.max("id").as("id")).executeTakeFirst();
  const top = Number(newest?.id ?? 0);
  if (top > keep) await db.deleteFrom("events").where("id", "<=", top - keep).execute();
}

export async function listReplicaIntents(db: Kysely<Database>): Promise<ReplicaIntentRow[]> {
  return await db.selectFrom("replica_intents").selectAll().execute();
}

export async function insertReplicaIntent(db: Kysely<Database>, row: NewReplicaIntent): Promise<void> {
  await db.insertInto("replica_intents").values(row).onConflict((conflict) => conflict.column("id").doNothing()).execute();
}

/** Takes a replica out of routing: the first withdrawal's time and reason stay (the drain waits from then). */
export async function withdrawReplicaIntent(db: Kysely<Database>, id: string, model: string, at: string, reason: string): Promise<void> {
  await db
    .insertInto("replica_intents")
    .values({ id, model, managed: 0, placed_at: at, withdrawn_at: at, withdraw_reason: reason })
    .onConflict((conflict) => conflict.column("id").doUpdateSet({ withdrawn_at: at, withdraw_reason: reason }).where("replica_intents.withdrawn_at", "is", null))
    .execute();
}

export async function deleteReplicaIntent(db: Kysely<Database>, id: string): Promise<void> {
  await db.deleteFrom("replica_intents").where("id", "=", id).execute();
}

export async function listModelStatus(db: Kysely<Database>): Promise<ModelStatusRow[]> {
  return await db.selectFrom("model_status").selectAll().execute();
}

export async function findModelStatus(db: Kysely<Database>, model: string): Promise<ModelStatusRow | undefined> {
  return await db.selectFrom("model_status").selectAll().where("model", "=", model).executeTakeFirst();
}

export type ModelStatusChange = Partial<Omit<ModelStatusRow, "model" | "updated_at">>;

/** A model the reconciler knows nothing of yet: no demand, no failures, no restart. */
export function emptyModelStatus(model: string, at: string): ModelStatusRow {
  return {
    model,
    demand_at: null,
    placement_state: null,
    placement_reason: null,
    last_failure: null,
    last_failure_at: null,
    failures: 0,
    backoff_until: null,
    restart_before: null,
    restart_in_place: 0,
    updated_at: at,
  };
}

/** Writes only the fields given, creating the row on first use. */
export async function updateModelStatus(db: Kysely<Database>, model: string, change: ModelStatusChange, at: string): Promise<void> {
  await db
    .insertInto("model_status")
    .values({ ...emptyModelStatus(model, at), ...change, updated_at: at })
    .onConflict((conflict) => conflict.column("model").doUpdateSet({ ...change, updated_at: at }))
    .execute();
}

export async function deleteModelStatus(db: Kysely<Database>, model: string): Promise<void> {
  await db.deleteFrom("model_status").where("model", "=", model).execute();
}

export async function listNodeControls(db: Kysely<Database>): Promise<NodeControlRow[]> {
  return await db.selectFrom("node_controls").selectAll().execute();
}

export async function setNodeControl(db: Kysely<Database>, row: NodeControlRow): Promise<void> {
  await db
    .insertInto("node_controls")
    .values(row)
    .onConflict((conflict) => conflict.column("node").doUpdateSet({ cordoned: row.cordoned, draining: row.draining, updated_at: row.updated_at }))
    .execute();
}
