import type { Kysely } from "kysely";
import type { Database } from "./schema.js";

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
export async function listAuditEvents(db: Kysely<Database>, filter: { model?: string | undefined; limit: number }): Promise<AuditEvent[]> {
  let query = db.selectFrom("audit_events").selectAll().orderBy("id", "desc").limit(filter.limit);
  if (filter.model !== undefined) query = query.where("model", "=", filter.model);
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
