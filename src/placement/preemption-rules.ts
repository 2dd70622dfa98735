import type { ModelClass } from "../catalog/index.js";

/** Where a model stands now: its class, its minimum, and how many replicas it has. */
export interface ModelStanding {
  readonly modelClass: ModelClass;
  readonly min: number;
  /** Replicas it has now (held ones, whatever their state). */
  readonly replicas: number;
}

/** Each class's rank: a replica gives way only to a model of a higher rank (or of its own, under the minimum rule). */
export const classRank: Readonly<Record<ModelClass, number>> = { opportunistic: 0, standard: 1, critical: 2 };

/**
 * How many of `holder`'s replicas `taker` may stop to place one of its own:
 *
 * - a higher class takes from a lower one, all of it (standard gives way to
 *   critical; opportunistic to both);
 * - within a class, only a model below its minimum takes, and only what the
 *   other grew into above its own minimum, never that minimum;
 * - a lower class takes nothing from a higher one, so nothing ever takes a
 *   critical model's minimum.
 */
export function replicasItMayTake(taker: ModelStanding, holder: ModelStanding): number {
  const takerRank = classRank[taker.modelClass];
  const holderRank = classRank[holder.modelClass];
  if (takerRank > holderRank) return Math.max(0, holder.replicas);
  if (takerRank === holderRank && taker.replicas < taker.min) return Math.max(0, holder.replicas - holder.min);
  return 0;
}
