import type { ModelClass } from "../catalog/index.js";
import type { DemandProfile, SnapshotNode } from "../placement/index.js";
import type { NodeState, ReplicaViewState } from "../protocol/index.js";

/** A catalog model as the reconciler wants it, with what it remembers of it. */
export interface DesiredModel {
  readonly name: string;
  readonly modelClass: ModelClass;
  readonly min: number;
  readonly max: number;
  readonly idleTimeoutMs: number;
  /** Grow toward max while replicas carry more than this many requests each; undefined: no growth. */
  readonly targetInFlight: number | undefined;
  readonly profiles: readonly DemandProfile[];
  /** A read of a profile's files is under way: nothing new is placed until its figures price the cards. */
  readonly factsPending?: boolean;
  /** The last request or demand call seen (ms since the epoch). */
  readonly demandAtMs: number | undefined;
  /** Nothing new starts before this (engine failures in a row). */
  readonly backoffUntilMs: number | undefined;
  /** Managed replicas placed before this are replaced (a rolling restart). */
  readonly restartBeforeMs: number | undefined;
  /** Stop each replica before its replacement starts (no room beside it). */
  readonly restartInPlace: boolean;
  /** The last time its load asked for at least the replicas it has: scaling down waits a cool-down from here. */
  readonly busyAtMs: number | undefined;
  /** What the model view says now, so a refusal is reported once, not every pass. */
  readonly placement: { readonly state: string; readonly reason: string | null } | undefined;
  /** When a replica of it last failed (ms since the epoch): a move back to the preferred profile waits a while after one. */
  readonly lastFailureAtMs?: number | undefined;
  /** Set for a model's canary arm: its replicas run `revision` beside the stable ones and are counted apart from them. */
  readonly canary?: { readonly revision: string };
}

export interface ObservedNode extends SnapshotNode {
  readonly state: NodeState;
  readonly cordoned: boolean;
  readonly draining: boolean;
}

export interface ObservedReplica {
  readonly id: string;
  readonly model: string;
  readonly profile: string;
  readonly node: string;
  readonly cards: readonly number[];
  readonly state: ReplicaViewState;
  /** Placed by the reconciler (its to scale and replace), not started by hand. */
  readonly managed: boolean;
  readonly placedAtMs: number;
  /** Taken out of routing at this time, to be drained and stopped. */
  readonly withdrawnAtMs: number | undefined;
  /** Requests running plus waiting, from the engine's metrics; undefined when not reported. */
  readonly inFlight: number | undefined;
  readonly reason: string | null;
  readonly memoryBytes: number;
  readonly cpuCores: number;
  /** A canary replica (a trial revision beside the stable ones); undefined for a stable one. */
  readonly arm?: "canary";
  /** A replica over several nodes: every member by rank, the leader (whose id, node and cards these are) first. */
  readonly members?: readonly ObservedMember[];
}

/** One member of a replica over several nodes: its own row's id, node and cards. */
export interface ObservedMember {
  readonly id: string;
  readonly rank: number;
  readonly node: string;
  readonly cards: readonly number[];
}

/** A member whose replica's leader row is gone (stopped, or failed and cleared): it must not run on alone. */
export interface StrayMember {
  readonly id: string;
  readonly model: string;
  readonly node: string;
  /** The cards it holds until its engine has stopped; none once failed or stopped. */
  readonly cards: readonly number[];
}

export interface Observed {
  readonly nowMs: number;
  readonly nodes: readonly ObservedNode[];
  readonly replicas: readonly ObservedReplica[];
  /** Members left behind by their replica's leader; each is stopped. */
  readonly strays?: readonly StrayMember[];
}

export interface Desired {
  readonly models: readonly DesiredModel[];
}

/** What one pass decided; the loop carries them out in this order. */
export type Action =
  /** A managed replica failed: record the failure (backoff), forget the row so its cards are free. */
  /** anotherServes: another replica of the model is ready, which ends the failure streak at once, so no backoff holds its replacement. */
  | { readonly kind: "record-failure"; readonly id: string; readonly model: string; readonly node: string; readonly reason: string; readonly anotherServes: boolean }
  /** A replica on a lost node: its agent is told to stop it when the node returns; a replacement is placed elsewhere. */
  | { readonly kind: "abandon"; readonly id: string; readonly model: string; readonly node: string; readonly reason: string }
  /** Out of routing now; drained and stopped once the withdraw delay has passed. */
  /** promotedTo: it gives way to a ready replica of the model on this better profile (a move back to the preferred profile). */
  | { readonly kind: "withdraw"; readonly id: string; readonly model: string; readonly node: string; readonly reason: string; readonly preemptedFor?: string; readonly promotedTo?: string }
  | { readonly kind: "stop"; readonly id: string; readonly model: string; readonly node: string }
  /** A member of a replica over several nodes whose leader is gone: stopped at once. */
  | { readonly kind: "stop-member"; readonly id: string; readonly model: string; readonly node: string }
  /** Recorded, but its agent never confirmed it: send the same start again (the agent answers a repeat with what runs). */
  | { readonly kind: "resume"; readonly id: string; readonly model: string; readonly node: string }
  | {
      readonly kind: "start";
      readonly model: string;
      readonly profile: string;
      readonly node: string;
      readonly cards: readonly number[];
      /** A replica over several nodes: every member by rank, the leader (node and cards above) first. */
      readonly members?: readonly { readonly node: string; readonly cards: readonly number[] }[];
      readonly reason: string;
      /** A canary replica, started at the canary's revision. */
      readonly canary?: { readonly revision: string };
      /** A move back to the preferred profile: the replica it will replace once it serves. */
      readonly promotes?: { readonly id: string; readonly profile: string };
    }
  | { readonly kind: "placement"; readonly model: string; readonly state: "placed" | "unplaceable" | "waiting"; readonly reason: string | null }
  | { readonly kind: "restart-finished"; readonly model: string }
  /** Requests in flight count as demand: an on-demand model in use does not idle out. */
  | { readonly kind: "demand-seen"; readonly model: string }
  /** The model's load asked for at least what it has (the cool-down of a scale-down starts over). */
  | { readonly kind: "busy"; readonly model: string };
