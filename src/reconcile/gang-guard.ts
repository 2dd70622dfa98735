import type { PlacementRefusal, PlacementResult, ReplicaDemand } from "../placement/index.js";

/**
 * Replicas over several nodes are planned and placed as gangs, but this
 * release does not yet start their members on their agents. Until it does,
 * a gang's placement becomes a refusal that says so, rather than a start of
 * its leader alone on part of the model's cards.
 */
export const gangNotStartedReason =
  "a replica over several nodes fits (placement found its gang), but this release does not start replicas over several nodes yet; give the profile nodes: 1, or see docs/multi-node.md";

export function withoutGangStarts(result: PlacementResult): PlacementResult {
  const gangs = result.placements.filter((placement) => placement.members !== undefined);
  if (gangs.length === 0) return result;
  const refusals: PlacementRefusal[] = [...result.refusals];
  for (const gang of gangs) {
    const existing = refusals.findIndex((refusal) => refusal.model === gang.model);
    const current = refusals[existing];
    if (current) refusals[existing] = { ...current, unplaced: current.unplaced + 1 };
    else refusals.push({ model: gang.model, unplaced: 1, reason: gangNotStartedReason });
  }
  return { placements: result.placements.filter((placement) => placement.members === undefined), refusals };
}

/** The demand as preemption may act on it: no victims are stopped for a gang this release would not start. */
export function withoutGangProfiles(demand: ReplicaDemand): ReplicaDemand {
  return { ...demand, profiles: demand.profiles.filter((profile) => (profile.nodes ?? 1) <= 1) };
}
