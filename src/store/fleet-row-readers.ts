import type { Selectable } from "kysely";
import { z } from "zod";
import {
  fabricNetworkSchema,
  inventorySchema,
  labelsSchema,
  replicaSpecSchema,
  replicaStates,
  replicaStatusSchema,
  type FabricNetwork,
  type Inventory,
  type ReplicaSpec,
  type ReplicaState,
  type ReplicaStatus,
} from "../protocol/index.js";
import { engineNames } from "../catalog/light.js";
import type { Database } from "./schema.js";

/**
 * Node and replica rows read as typed objects: JSON columns parsed once and
 * leniently, so a row an older release (or a hand) wrote reads as something a
 * view can show, never an exception that takes down every list of the fleet.
 */

/** The state column of a replica placed and recorded whose agent has not yet confirmed it. */
export const pendingState = "pending";

export interface StoredNode {
  readonly name: string;
  readonly address: string;
  readonly fabric: string;
  readonly labels: Readonly<Record<string, string>>;
  /** What the agent last reported; an empty inventory when the stored one cannot be read. */
  readonly inventory: Inventory;
  /** Set when the stored inventory could not be read: the node shows no cards until its agent reports again. */
  readonly inventoryUnreadable: boolean;
  /** sha256 of the node's credential: the credential itself is never stored. */
  readonly credential_hash: string;
  readonly joined_at: string;
  readonly last_seen_at: string;
  /** Where the node is reached on its fabric; undefined when its agent reports none (or the stored one cannot be read). */
  readonly fabricNetwork: FabricNetwork | undefined;
}

export interface StoredReplica {
  readonly id: string;
  readonly node: string;
  readonly model: string;
  readonly profile: string;
  readonly engine: string;
  readonly cards: readonly number[];
  /** What the server sent the agent; null for a replica the agent reported on its own (adopted). */
  readonly spec: ReplicaSpec | null;
  readonly state: ReplicaState;
  /**
   * Recorded by the server before its agent was asked to start it: the agent
   * has not answered or reported it yet. Cleared by the first report.
   */
  readonly pending: boolean;
  /** The agent's last report, or one made from the row's columns when the stored report cannot be read. */
  readonly status: ReplicaStatus;
  readonly stop_requested: boolean;
  readonly created_at: string;
  readonly updated_at: string;
}

export type NodeRow = Selectable<Database["nodes"]>;
export type ReplicaRow = Selectable<Database["replicas"]>;

export const emptyInventory: Inventory = { hostname: "", gpus: [], memory_bytes: 0, cpu_cores: 1, engines: [], disk_free_bytes: 0, simulated: false };
export const cardsSchema = z.array(z.number().int().min(0));

export function parseJson(text: unknown): unknown {
  if (typeof text !== "string") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export function text(value: unknown, fallback = ""): string {
  return typeof value === "string" ? value : fallback;
}

/**
 * Reading a row parses and validates its JSON; at 2,000 replicas that was
 * most of a `GET /api/v1/replicas`, repeated on every call for rows that had
 * not changed. The typed row is kept and reused while every column of the
 * stored row is the same text (compared whole, so a changed row is always
 * read again). Bounded: the cache starts over past `limit` rows.
 */
export function memoized<Row extends Record<string, unknown>, Typed>(key: (row: Row) => string, read: (row: Row) => Typed, limit = 200_000): (row: Row) => Typed {
  const cache = new Map<string, { row: Row; typed: Typed }>();
  return (row) => {
    const id = key(row);
    const hit = cache.get(id);
    if (hit && Object.keys(row).every((column) => hit.row[column] === row[column])) return hit.typed;
    const typed = read(row);
    if (cache.size >= limit) cache.clear();
    cache.set(id, { row, typed });
    return typed;
  };
}

/** A node row as stored, typed; never throws, whatever the columns hold. */
export function readNodeRow(row: NodeRow): StoredNode {
  const inventory = inventorySchema.safeParse(parseJson(row.inventory));
  const labels = labelsSchema.safeParse(parseJson(row.labels));
  return {
    name: text(row.name),
    address: text(row.address),
    fabric: text(row.fabric),
    labels: labels.success ? labels.data : {},
    inventory: inventory.success ? inventory.data : emptyInventory,
    inventoryUnreadable: !inventory.success,
    credential_hash: text(row.credential_hash),
    joined_at: text(row.joined_at),
    last_seen_at: text(row.last_seen_at),
    fabricNetwork: row.fabric_network === null ? undefined : fabricNetworkSchema.safeParse(parseJson(row.fabric_network)).data,
  };
}

/** A replica row as stored, typed; never throws, whatever the columns hold. */
export function readReplicaRow(row: ReplicaRow): StoredReplica {
  const stateColumn = (replicaStates as readonly unknown[]).includes(row.state) ? (row.state as ReplicaState) : undefined;
  const cardsColumn = cardsSchema.safeParse(parseJson(row.cards));
  const spec = row.spec === null ? undefined : replicaSpecSchema.safeParse(parseJson(row.spec));
  const reported = replicaStatusSchema.safeParse(parseJson(row.status));
  // Kept in its own column since 0011; a row written before keeps it in the status.
  const progress = row.progress === null ? undefined : progressSchema.safeParse(parseJson(row.progress));
  const updatedAt = text(row.updated_at);
  const status: ReplicaStatus = reported.success
    ? progress?.success
      ? { ...reported.data, progress: progress.data }
      : reported.data
    : {
        id: text(row.id),
        model: text(row.model),
        profile: text(row.profile),
        engine: (engineNames as readonly unknown[]).includes(row.engine) ? (row.engine as ReplicaStatus["engine"]) : "vllm",
        cards: cardsColumn.success ? cardsColumn.data : [],
        // A replica whose last report cannot be read is not trusted to be running.
        state: stateColumn === undefined || stateColumn === "ready" ? "failed" : stateColumn,
        reason: "the server cannot read the stored report of this replica; it is shown as its agent reports it next",
        since: updatedAt,
      };
  return {
    id: text(row.id),
    node: text(row.node),
    model: text(row.model),
    profile: text(row.profile),
    engine: text(row.engine),
    cards: cardsColumn.success ? cardsColumn.data : status.cards,
    spec: spec?.success ? spec.data : null,
    state: status.state,
    pending: row.state === pendingState,
    status,
    stop_requested: Number(row.stop_requested) !== 0,
    created_at: text(row.created_at),
    updated_at: updatedAt,
  };
}

export const progressSchema = replicaStatusSchema.shape.progress.unwrap();
