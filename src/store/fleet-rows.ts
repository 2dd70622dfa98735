import type { Kysely } from "kysely";
import type { Database } from "./schema.js";

export type NodeRow = Database["nodes"];
export type ReplicaRow = Database["replicas"];

export async function insertJoinToken(db: Kysely<Database>, row: Database["join_tokens"]): Promise<void> {
  await db.insertInto("join_tokens").values(row).execute();
}

export async function joinTokenExists(db: Kysely<Database>, tokenHash: string): Promise<boolean> {
  return (await db.selectFrom("join_tokens").select("id").where("token_hash", "=", tokenHash).executeTakeFirst()) !== undefined;
}

export async function findNode(db: Kysely<Database>, name: string): Promise<NodeRow | undefined> {
  return await db.selectFrom("nodes").selectAll().where("name", "=", name).executeTakeFirst();
}

export async function listNodes(db: Kysely<Database>): Promise<NodeRow[]> {
  return await db.selectFrom("nodes").selectAll().orderBy("name").execute();
}

/** A join of a known name replaces its credential and address: the machine was reinstalled or its state lost. */
export async function upsertNode(db: Kysely<Database>, row: NodeRow): Promise<void> {
  const { name: _name, joined_at: _joinedAt, ...changes } = row;
  await db
    .insertInto("nodes")
    .values(row)
    .onConflict((conflict) => conflict.column("name").doUpdateSet(changes))
    .execute();
}

export async function touchNode(db: Kysely<Database>, name: string, changes: Partial<Pick<NodeRow, "address" | "inventory" | "last_seen_at">>): Promise<void> {
  await db.updateTable("nodes").set(changes).where("name", "=", name).execute();
}

export async function findReplica(db: Kysely<Database>, id: string): Promise<ReplicaRow | undefined> {
  return await db.selectFrom("replicas").selectAll().where("id", "=", id).executeTakeFirst();
}

export async function listReplicas(db: Kysely<Database>, filter: { model?: string | undefined; node?: string | undefined } = {}): Promise<ReplicaRow[]> {
  let query = db.selectFrom("replicas").selectAll();
  if (filter.model !== undefined) query = query.where("model", "=", filter.model);
  if (filter.node !== undefined) query = query.where("node", "=", filter.node);
  return await query.orderBy("model").orderBy("id").execute();
}

/**
 * Inserts, or updates what an agent reports; the spec, creation time and stop
 * request are kept. A row of that id on another node is left alone (in the
 * same statement, so two nodes reporting one id at once cannot both win):
 * answers false then.
 */
export async function upsertReplica(db: Kysely<Database>, row: ReplicaRow): Promise<boolean> {
  const result = await db
    .insertInto("replicas")
    .values(row)
    .onConflict((conflict) =>
      conflict
        .column("id")
        .doUpdateSet({
          model: row.model,
          profile: row.profile,
          engine: row.engine,
          cards: row.cards,
          state: row.state,
          status: row.status,
          updated_at: row.updated_at,
          ...(row.spec !== null ? { spec: row.spec } : {}),
        })
        .where("replicas.node", "=", row.node),
    )
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
}

export async function updateReplica(db: Kysely<Database>, id: string, changes: Partial<Pick<ReplicaRow, "state" | "status" | "stop_requested" | "updated_at">>): Promise<void> {
  await db.updateTable("replicas").set(changes).where("id", "=", id).execute();
}

export async function deleteReplica(db: Kysely<Database>, id: string): Promise<void> {
  await db.deleteFrom("replicas").where("id", "=", id).execute();
}
