import type { ReplicaStatus } from "../protocol/index.js";
import { holdsCards } from "../fleet/index.js";
import type { ReplicaWrite, StoredReplica } from "../store/index.js";

export interface HeartbeatDiffInput {
  readonly node: string;
  /** What the agent reports, validated. */
  readonly reported: readonly ReplicaStatus[];
  /** The rows of this node as stored. */
  readonly stored: readonly StoredReplica[];
  readonly nowMs: number;
  /** A replica the agent stopped reporting is failed only after this long: a heartbeat built before its start may still arrive. */
  readonly missingGraceMs: number;
}

export interface HeartbeatWrites {
  /** New reports, and reports that differ from the stored one: an unchanged replica is not written. */
  readonly upserts: readonly ReplicaWrite[];
  /** Rows whose job is done: a stop the agent reports finished, or a stopped replica the agent no longer knows. */
  readonly deletes: readonly string[];
  /** Replicas the agent no longer reports: failed, with the reason. */
  readonly failures: readonly { readonly id: string; readonly status: ReplicaStatus }[];
  /** Stopped while the node was lost, and reported again: its agent can be told now. */
  readonly stopsToSend: readonly string[];
  /**
   * Reported running (or failed) with no row on this node: the server never
   * placed it here, so it is stopped, not shown. The caller tells apart an id
   * recorded on another node (a copied state file) from one nobody placed.
   */
  readonly orphans: readonly ReplicaStatus[];
  /**
   * Whether the beat changed what the reconciler decides on: a replica's
   * state, endpoint, load or reason, a row deleted or failed. A fetch's
   * progress is written and shown but decides nothing, so it wakes no pass.
   */
  readonly changesDecisions: boolean;
}

/**
 * The same report, whatever the order of its keys, a key holding undefined
 * counting as absent (as in the JSON it was stored as); `ignored` keys are
 * left out at the top level. Compared in place: building a sorted text of
 * both sides at every beat was a tenth of a heartbeat's work in the handler.
 */
function sameReport(left: unknown, right: unknown, ignored?: string): boolean {
  if (left === right) return true;
  if (typeof left !== "object" || typeof right !== "object" || left === null || right === null) return false;
  if (Array.isArray(left) || Array.isArray(right)) {
    if (!Array.isArray(left) || !Array.isArray(right) || left.length !== right.length) return false;
    return left.every((item, index) => sameReport(item, right[index]));
  }
  const leftRecord = left as Record<string, unknown>;
  const rightRecord = right as Record<string, unknown>;
  let compared = 0;
  for (const key in leftRecord) {
    if (key === ignored || leftRecord[key] === undefined) continue;
    if (!sameReport(leftRecord[key], rightRecord[key])) return false;
    compared += 1;
  }
  for (const key in rightRecord) if (key !== ignored && rightRecord[key] !== undefined) compared -= 1;
  return compared === 0;
}

/**
 * What one heartbeat changes in the store, decided apart from the store. At
 * 500 nodes beating every 2 s, rewriting every replica of every beat was
 * most of the server's write load; only what changed is written now.
 */
export function heartbeatDiff(input: HeartbeatDiffInput): HeartbeatWrites {
  const at = new Date(input.nowMs).toISOString();
  const byId = new Map(input.stored.map((row) => [row.id, row]));
  const reportedIds = new Set<string>();
  const upserts: ReplicaWrite[] = [];
  const deletes: string[] = [];
  const failures: { id: string; status: ReplicaStatus }[] = [];
  const stopsToSend: string[] = [];
  const orphans: ReplicaStatus[] = [];
  let changesDecisions = false;
  for (const status of input.reported) {
    reportedIds.add(status.id);
    const row = byId.get(status.id);
    if (status.state === "stopped") {
      // A stop the server asked for is finished: the row has done its job.
      if (row) deletes.push(status.id);
      continue;
    }
    if (!row) {
      // Already being stopped: telling it again at every beat would only repeat the stop.
      if (status.state !== "draining") orphans.push(status);
      continue;
    }
    // A pending row is written even when the report matches it word for word: the report is what clears pending.
    if (row.pending || !sameReport(row.status, status)) {
      // A fetch's progress is written and shown, but decides nothing.
      if (row.pending || !sameReport(row.status, status, "progress")) changesDecisions = true;
      upserts.push({
        id: status.id,
        node: input.node,
        status,
        spec: null,
        stop_requested: row.stop_requested,
        created_at: row.created_at,
        updated_at: at,
      });
    }
    // Stopped while the node was lost: its agent was never told. Now it can be.
    if (row.stop_requested && status.state !== "draining") stopsToSend.push(status.id);
  }
  for (const row of input.stored) {
    if (reportedIds.has(row.id) || !holdsCards(row.state)) continue;
    if (input.nowMs - Date.parse(row.created_at) < input.missingGraceMs) continue;
    if (row.stop_requested) {
      deletes.push(row.id);
      continue;
    }
    failures.push({
      id: row.id,
      status: { ...row.status, state: "failed", reason: `the agent on node ${input.node} no longer reports this replica (its state file was lost or replaced)`, since: at },
    });
  }
  return { upserts, deletes, failures, stopsToSend, orphans, changesDecisions: changesDecisions || deletes.length > 0 || failures.length > 0 };
}
