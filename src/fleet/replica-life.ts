import type { ReplicaViewState } from "../protocol/index.js";

/**
 * Where a replica is in its life, the one definition every rule reads:
 * - live: its engine runs or is on its way up (fetching, starting, ready), or
 *   its node is lost and it is presumed running there;
 * - leaving: draining, its engine still runs and holds its cards, but it no
 *   longer counts toward its model;
 * - gone: stopped or failed, nothing runs.
 * Before, card ownership, model counts and node listings each had their own
 * rule, and a draining replica was free for one and busy for another.
 */
export type ReplicaLife = "live" | "leaving" | "gone";

export function replicaLife(state: ReplicaViewState): ReplicaLife {
  switch (state) {
    case "fetching":
    case "starting":
    case "ready":
    case "lost":
    // Placed and recorded, its agent about to start it: its cards are spoken for.
    case "pending":
      return "live";
    case "draining":
      return "leaving";
    case "stopped":
    case "failed":
      return "gone";
  }
}

/** Its cards are taken: a new replica placed on them would find the memory in use. */
export function holdsCards(state: ReplicaViewState): boolean {
  return replicaLife(state) !== "gone";
}

/** It counts toward its model's replicas (the `desired` of a model's counts). */
export function countsTowardModel(state: ReplicaViewState): boolean {
  return replicaLife(state) === "live";
}
