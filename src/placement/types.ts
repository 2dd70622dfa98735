import type { EngineName, ModelClass } from "../catalog/index.js";

/**
 * The inputs and outputs of placement: what the reconciler hands in once per
 * cycle, and what it gets back. Placement itself is pure (no clock, no I/O,
 * no randomness): the same snapshot and demands give the same answer, which
 * is what lets the reconciler be level-triggered and the tests be exact.
 */

export interface SnapshotCard {
  readonly index: number;
  readonly cardClass: string;
  readonly memoryBytes: number;
  readonly fabric: string;
  /** Held by processes llmgw did not start: placement counts it as taken (absent: none reported). */
  readonly foreignBytes?: number | undefined;
}

/** One node as placement sees it at the start of a cycle. */
export interface SnapshotNode {
  readonly name: string;
  /**
   * False for a node that must get nothing new: lost, settling after a
   * server restart, or cordoned by an operator. The reason is what a refusal
   * says about it ("cordoned", "lost").
   */
  readonly schedulable: boolean;
  readonly unschedulableReason?: string;
  readonly engines: readonly EngineName[];
  readonly cards: readonly SnapshotCard[];
  readonly memoryBytes: number;
  readonly cpuCores: number;
}

/** A replica that holds resources now (any state but stopped or failed). */
export interface HeldReplica {
  readonly id: string;
  readonly model: string;
  readonly profile: string;
  readonly node: string;
  readonly cards: readonly number[];
  /** Host memory and cores it reserves (0 when its profile names none). */
  readonly memoryBytes: number;
  readonly cpuCores: number;
  readonly modelClass: ModelClass;
  /**
   * Nodes the replica spans when it is one member of a replica over several
   * nodes (a gang; one HeldReplica per member node, all with the replica's
   * id); absent or 1 for a replica on one node. Preemption never stops a
   * gang's member alone, so it never takes such replicas.
   */
  readonly gangNodes?: number;
}

export interface Snapshot {
  readonly nodes: readonly SnapshotNode[];
  readonly replicas: readonly HeldReplica[];
}

/** One way to run a model, with what one replica of it needs. */
export interface DemandProfile {
  readonly name: string;
  readonly engine: EngineName;
  /** Cards of this class only; undefined for a CPU profile (gpus 0) or any class. */
  readonly cardClass: string | undefined;
  /** Cards per node. */
  readonly gpus: number;
  /** Nodes one replica spans (a gang: each node gives `gpus` cards on one fabric); absent or 1 for one node. */
  readonly nodes?: number;
  /** Host memory and cores each node of the replica reserves. */
  readonly memoryBytes: number;
  readonly cpuCores: number;
  /**
   * Bytes each card must hold for the weights and the KV cache at the
   * model's context, from the planner's own functions; undefined when the
   * model's files could not be read, and then only the card count is checked.
   */
  readonly bytesPerCard: number | undefined;
}

/** "Place `count` more replicas of this model", profiles in order of preference. */
export interface ReplicaDemand {
  readonly model: string;
  readonly modelClass: ModelClass;
  readonly count: number;
  readonly profiles: readonly DemandProfile[];
}

/** One node of a replica over several nodes: its cards and its rank (0 is the leader, whose endpoint serves). */
export interface GangMember {
  readonly node: string;
  readonly cards: readonly number[];
  readonly rank: number;
}

export interface Placement {
  readonly model: string;
  readonly profile: string;
  /** The node (for a gang, the leader's, rank 0) and its cards. */
  readonly node: string;
  readonly cards: readonly number[];
  /** For a replica over several nodes: every member by rank, the leader first. Absent for one node. */
  readonly members?: readonly GangMember[];
}

/** Why a demand (or part of it) could not be placed, in the planner's words. */
export interface PlacementRefusal {
  readonly model: string;
  /** How many of the demanded replicas were not placed. */
  readonly unplaced: number;
  /** e.g. "0 of 5 nodes: 3 have no free h100, 2 have 40 GiB free per card and need 61 GiB". */
  readonly reason: string;
}

export interface PlacementResult {
  readonly placements: readonly Placement[];
  readonly refusals: readonly PlacementRefusal[];
}
