import type { Kysely } from "kysely";
import type { Database } from "./schema.js";

/** How a model moved: `ctl model update`, `ctl model rollback`, or a canary promoted (by hand or by its gate). */
export type VersionChangeKind = "update" | "rollback" | "canary-promote";

export interface VersionChange {
  readonly id: number;
  readonly model: string;
  readonly from: string;
  readonly to: string;
  readonly kind: VersionChangeKind;
  /** The admin token's name. */
  readonly actor: string;
  /** The person at the terminal, as the CLI reports it. */
  readonly actor_user: string | null;
  readonly at: string;
}

export async function insertVersionChange(db: Kysely<Database>, change: Omit<VersionChange, "id">): Promise<void> {
  await db
    .insertInto("model_versions")
    .values({ model: change.model, from_revision: change.from, to_revision: change.to, kind: change.kind, actor: change.actor, actor_user: change.actor_user, at: change.at })
    .execute();
}

/** Removes the newest change of a model, when the rollout it recorded could not start. */
export async function deleteVersionChange(db: Kysely<Database>, id: number): Promise<void> {
  await db.deleteFrom("model_versions").where("id", "=", id).execute();
}

/** Oldest first. A kind this release does not know reads as an update, so the history never fails on a row. */
export async function listVersionChanges(db: Kysely<Database>, model: string): Promise<VersionChange[]> {
  const rows = await db.selectFrom("model_versions").selectAll().where("model", "=", model).orderBy("id", "asc").execute();
  return rows.map((row) => ({
    id: Number(row.id),
    model: row.model,
    from: row.from_revision,
    to: row.to_revision,
    kind: row.kind === "rollback" || row.kind === "canary-promote" ? row.kind : "update",
    actor: row.actor,
    actor_user: row.actor_user,
    at: row.at,
  }));
}
