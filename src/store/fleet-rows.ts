import type { CompiledQuery, Kysely } from "kysely";
import { replicaStates, type FabricNetwork, type Inventory, type ReplicaProgress, type ReplicaSpec, type ReplicaState, type ReplicaStatus } from "../protocol/index.js";
import type { Database } from "./schema.js";
import { cardsSchema, memoized, parseJson, pendingState, progressSchema, readNodeRow, readReplicaRow, text, type NodeRow, type ReplicaRow, type StoredNode, type StoredReplica } from "./fleet-row-readers.js";

export { readNodeRow, readReplicaRow, type StoredNode, type StoredReplica } from "./fleet-row-readers.js";

/**
 * Reading and writing the rows of nodes and replicas. Reads go through the
 * lenient readers of fleet-row-readers.ts, so a row an older release wrote
 * still shows.
 */

export interface NewNode {
  readonly name: string;
  readonly address: string;
  readonly fabric: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly inventory: Inventory;
  /** sha256 of the node's credential: the credential itself is never stored. */
  readonly credential_hash: string;
  readonly joined_at: string;
  readonly last_seen_at: string;
  /** Where the node is reached on its fabric, as its agent reported it at the join. */
  readonly fabric_network?: FabricNetwork | undefined;
}

/** The state column of a row recorded before its agent was told (the status then says `fetching`). */

export interface ReplicaWrite {
  readonly id: string;
  readonly node: string;
  readonly status: ReplicaStatus;
  /** Written before the agent is asked (intent before side effect); a report clears it. */
  readonly pending?: boolean;
  /** Null keeps the spec already stored (an agent's report never carries one). */
  readonly spec: ReplicaSpec | null;
  readonly stop_requested: boolean;
  readonly created_at: string;
  readonly updated_at: string;
}


function replicaRow(write: ReplicaWrite): ReplicaRow {
  const { progress, ...status } = write.status;
  return {
    id: write.id,
    node: write.node,
    model: write.status.model,
    profile: write.status.profile,
    engine: write.status.engine,
    cards: JSON.stringify(write.status.cards),
    spec: write.spec === null ? null : JSON.stringify(write.spec),
    state: write.pending ? pendingState : write.status.state,
    status: JSON.stringify(status),
    progress: progress === undefined ? null : JSON.stringify(progress),
    stop_requested: write.stop_requested ? 1 : 0,
    created_at: write.created_at,
    updated_at: write.updated_at,
  };
}

export async function insertJoinToken(db: Kysely<Database>, row: Database["join_tokens"]): Promise<void> {
  await db.insertInto("join_tokens").values(row).execute();
}

export async function joinTokenExists(db: Kysely<Database>, tokenHash: string): Promise<boolean> {
  return (await db.selectFrom("join_tokens").select("id").where("token_hash", "=", tokenHash).executeTakeFirst()) !== undefined;
}

const readNodeRowOnce = memoized<NodeRow, StoredNode>((row) => String(row.name), readNodeRow);
const readReplicaRowOnce = memoized<ReplicaRow, StoredReplica>((row) => String(row.id), readReplicaRow);

/**
 * The two reads every heartbeat makes, built and compiled by Kysely once per
 * database handle and run again with the beat's node name: building the query
 * tree and compiling it anew at each beat was about a tenth of the CPU of a
 * heartbeat's handler at 500 nodes.
 */
interface BeatReads {
  readonly node: CompiledQuery<NodeRow>;
  readonly replicasOfNode: CompiledQuery<ReplicaRow>;
}
const beatReads = new WeakMap<Kysely<Database>, BeatReads>();

function beatReadsOf(db: Kysely<Database>): BeatReads {
  const known = beatReads.get(db);
  if (known !== undefined) return known;
  // The name given here is a placeholder: each run passes its own as the one parameter.
  const compiled: BeatReads = {
    node: db.selectFrom("nodes").selectAll().where("name", "=", "").compile(),
    replicasOfNode: db.selectFrom("replicas").selectAll().where("node", "=", "").orderBy("model").orderBy("id").compile(),
  };
  beatReads.set(db, compiled);
  return compiled;
}

function withName<Row>(query: CompiledQuery<Row>, name: string): CompiledQuery<Row> {
  return { ...query, parameters: [name] };
}

export async function findNode(db: Kysely<Database>, name: string): Promise<StoredNode | undefined> {
  const row = (await db.executeQuery(withName(beatReadsOf(db).node, name))).rows[0];
  return row === undefined ? undefined : readNodeRowOnce(row);
}

export async function listNodes(db: Kysely<Database>): Promise<StoredNode[]> {
  return (await db.selectFrom("nodes").selectAll().orderBy("name").execute()).map(readNodeRowOnce);
}

/** When the node heard from longest ago was last heard from: whether every node has reported since a time, in one read. */
export async function oldestLastSeen(db: Kysely<Database>): Promise<string | undefined> {
  const row = await db.selectFrom("nodes").select((eb) => eb.fn.min("last_seen_at").as("oldest")).executeTakeFirst();
  return typeof row?.oldest === "string" ? row.oldest : undefined;
}

/** A join of a known name replaces its credential and address: the machine was reinstalled or its state lost. */
export async function upsertNode(db: Kysely<Database>, node: NewNode): Promise<void> {
  const { fabric_network: fabricNetwork, ...fields } = node;
  const row: NodeRow = { ...fields, labels: JSON.stringify(node.labels), inventory: JSON.stringify(node.inventory), fabric_network: fabricNetwork === undefined ? null : JSON.stringify(fabricNetwork) };
  const { name: _name, joined_at: _joinedAt, ...changes } = row;
  await db
    .insertInto("nodes")
    .values(row)
    .onConflict((conflict) => conflict.column("name").doUpdateSet(changes))
    .execute();
}

/** `fabric_network`: undefined leaves it as stored, null clears it. */
export async function touchNode(
  db: Kysely<Database>,
  name: string,
  changes: { address: string; last_seen_at: string; inventory?: Inventory | undefined; fabric_network?: FabricNetwork | null | undefined },
): Promise<void> {
  const { inventory, fabric_network: fabricNetwork, ...rest } = changes;
  await db
    .updateTable("nodes")
    .set({
      ...rest,
      ...(inventory !== undefined ? { inventory: JSON.stringify(inventory) } : {}),
      ...(fabricNetwork !== undefined ? { fabric_network: fabricNetwork === null ? null : JSON.stringify(fabricNetwork) } : {}),
    })
    .where("name", "=", name)
    .execute();
}

export async function findReplica(db: Kysely<Database>, id: string): Promise<StoredReplica | undefined> {
  const row = await db.selectFrom("replicas").selectAll().where("id", "=", id).executeTakeFirst();
  return row === undefined ? undefined : readReplicaRowOnce(row);
}

export async function listReplicas(db: Kysely<Database>, filter: { model?: string | undefined; node?: string | undefined } = {}): Promise<StoredReplica[]> {
  if (filter.node !== undefined && filter.model === undefined) return (await db.executeQuery(withName(beatReadsOf(db).replicasOfNode, filter.node))).rows.map(readReplicaRowOnce);
  let query = db.selectFrom("replicas").selectAll();
  if (filter.model !== undefined) query = query.where("model", "=", filter.model);
  if (filter.node !== undefined) query = query.where("node", "=", filter.node);
  return (await query.orderBy("model").orderBy("id").execute()).map(readReplicaRowOnce);
}

/** These replicas, read whole; an id with no row is left out. */
export async function findReplicas(db: Kysely<Database>, ids: readonly string[]): Promise<StoredReplica[]> {
  const rows: StoredReplica[] = [];
  // Bounded IN lists: SQLite and Postgres both cap the parameters of one statement.
  for (let start = 0; start < ids.length; start += 500) {
    const slice = ids.slice(start, start + 500);
    rows.push(...(await db.selectFrom("replicas").selectAll().where("id", "in", slice).execute()).map(readReplicaRowOnce));
  }
  return rows;
}

/**
 * Every fetch's progress as its column holds it, by replica id, reading that
 * column alone: what the replica list reads when only progress moved. A
 * progress that cannot be read is left out, as readReplicaRow leaves it.
 */
export async function listReplicaProgress(db: Kysely<Database>): Promise<Map<string, ReplicaProgress>> {
  const rows = await db.selectFrom("replicas").select(["id", "progress"]).where("progress", "is not", null).execute();
  const progress = new Map<string, ReplicaProgress>();
  for (const row of rows) {
    const parsed = progressSchema.safeParse(parseJson(row.progress));
    if (parsed.success) progress.set(text(row.id), parsed.data);
  }
  return progress;
}

/** Where a replica is and what holds it, without its report: what model counts and node listings need. */
export interface ReplicaHolding {
  readonly id: string;
  readonly node: string;
  readonly model: string;
  readonly state: ReplicaState;
  readonly cards: readonly number[];
  readonly stop_requested: boolean;
}

function readHolding(row: Pick<ReplicaRow, "id" | "node" | "model" | "state" | "cards" | "stop_requested">): ReplicaHolding {
  const cards = cardsSchema.safeParse(parseJson(row.cards));
  // The same rule as readReplicaRow: a state this release does not know is not trusted to be running.
  const state = (replicaStates as readonly unknown[]).includes(row.state) ? (row.state as ReplicaState) : "failed";
  return { id: text(row.id), node: text(row.node), model: text(row.model), state, cards: cards.success ? cards.data : [], stop_requested: Number(row.stop_requested) !== 0 };
}

/**
 * Every replica's place and state, reading only the small columns: the
 * reports and specs (most of a row's bytes) are left in the database. Model
 * counts and node listings read this at every call.
 */
export async function listReplicaHoldings(db: Kysely<Database>, filter: { node?: string | undefined } = {}): Promise<ReplicaHolding[]> {
  let query = db.selectFrom("replicas").select(["id", "node", "model", "state", "cards", "stop_requested"]);
  if (filter.node !== undefined) query = query.where("node", "=", filter.node);
  return (await query.orderBy("model").orderBy("id").execute()).map(readHolding);
}

/** Every node's name and when it was last heard from: what node states need. */
export async function listNodeTimes(db: Kysely<Database>): Promise<{ name: string; last_seen_at: string }[]> {
  return (await db.selectFrom("nodes").select(["name", "last_seen_at"]).orderBy("name").execute()).map((row) => ({ name: text(row.name), last_seen_at: text(row.last_seen_at) }));
}

/**
 * Inserts, or updates what an agent reports; the spec (when null), creation
 * time and stop request are kept. A row of that id on another node is left
 * alone (in the same statement, so two nodes reporting one id at once cannot
 * both win): answers false then.
 */
export async function upsertReplica(db: Kysely<Database>, write: ReplicaWrite): Promise<boolean> {
  const row = replicaRow(write);
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
          progress: row.progress,
          updated_at: row.updated_at,
          ...(row.spec !== null ? { spec: row.spec } : {}),
        })
        .where("replicas.node", "=", row.node),
    )
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
}

export async function updateReplica(db: Kysely<Database>, id: string, changes: { status?: ReplicaStatus; stop_requested?: boolean; updated_at: string }): Promise<void> {
  const { progress, ...status } = changes.status ?? {};
  await db
    .updateTable("replicas")
    .set({
      updated_at: changes.updated_at,
      ...(changes.status !== undefined ? { state: changes.status.state, status: JSON.stringify(status), progress: progress === undefined ? null : JSON.stringify(progress) } : {}),
      ...(changes.stop_requested !== undefined ? { stop_requested: changes.stop_requested ? 1 : 0 } : {}),
    })
    .where("id", "=", id)
    .execute();
}

export async function deleteReplica(db: Kysely<Database>, id: string): Promise<void> {
  await db.deleteFrom("replicas").where("id", "=", id).execute();
}

/**
 * Raised by the store itself (see migrations.ts): `fleet` on every change a
 * node, replica or model view shows but a fetch's progress, `progress` on
 * every change of one.
 */
export async function readFleetRevisions(db: Kysely<Database>): Promise<{ readonly fleet: number; readonly progress: number }> {
  const rows = await db.selectFrom("fleet_revision").select(["id", "revision"]).where("id", "in", [1, 2]).execute();
  const of = (id: number) => Number(rows.find((row) => Number(row.id) === id)?.revision ?? 0);
  return { fleet: of(1), progress: of(2) };
}
