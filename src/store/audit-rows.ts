import type { Kysely } from "kysely";
import type { Database } from "./schema.js";
import { likePattern } from "./like-pattern.js";

export interface AuditEvent {
  readonly id: number;
  readonly at: string;
  /** The admin token's name. */
  readonly actor: string;
  /** The person at the terminal, as the CLI reports it (the sudo user rather than root). */
  readonly actor_user: string | null;
  /** Noun-verb: model-added, model-removed, model-scaled, ... */
  readonly action: string;
  readonly model: string | null;
  readonly before: unknown;
  readonly after: unknown;
}

export type NewAuditEvent = Omit<AuditEvent, "id">;

export async function insertAuditEvent(db: Kysely<Database>, event: NewAuditEvent): Promise<void> {
  await db
    .insertInto("audit_events")
    .values({
      at: event.at,
      actor: event.actor,
      actor_user: event.actor_user,
      action: event.action,
      model: event.model,
      before: event.before === undefined || event.before === null ? null : JSON.stringify(event.before),
      after: event.after === undefined || event.after === null ? null : JSON.stringify(event.after),
    })
    .execute();
}

/** Newest first. */
export interface AuditFilter {
  readonly model?: string | undefined;
  readonly action?: string | undefined;
  /** The token name or local user that acted. */
  readonly actor?: string | undefined;
  /** Text the action, model or actor holds, in any case. */
  readonly text?: string | undefined;
  /** Events before this id (the page after one already read, newest first). */
  readonly beforeId?: number | undefined;
  readonly limit: number;
}

/** The newest `limit` audit events that match, newest first. */
export async function listAuditEvents(db: Kysely<Database>, filter: AuditFilter): Promise<AuditEvent[]> {
  let query = db.selectFrom("audit_events").selectAll().orderBy("id", "desc").limit(filter.limit);
  if (filter.model !== undefined) query = query.where("model", "=", filter.model);
  if (filter.action !== undefined) query = query.where("action", "=", filter.action);
  const actor = filter.actor;
  if (actor !== undefined) query = query.where((eb) => eb.or([eb("actor", "=", actor), eb("actor_user", "=", actor)]));
  if (filter.text !== undefined) {
    const pattern = likePattern(filter.text);
    query = query.where((eb) => eb.or((["action", "model", "actor", "actor_user"] as const).map((column) => eb(eb.fn("lower", [eb.ref(column)]), "like", pattern))));
  }
  if (filter.beforeId !== undefined) query = query.where("id", "<", filter.beforeId);
  const rows = await query.execute();
  return rows.map((row) => ({
    id: Number(row.id),
    at: row.at,
    actor: row.actor,
    actor_user: row.actor_user,
    action: row.action,
    model: row.model,
    before: row.before === null ? null : (JSON.parse(row.before) as unknown),
    after: row.after === null ? null : (JSON.parse(row.after) as unknown),
  }));
}
