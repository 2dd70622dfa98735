import type { ModelClass } from "../catalog/index.js";
import { placeReplicas } from "./place-replicas.js";
import type { DemandProfile, Snapshot } from "./types.js";

/** How many more replicas headroom looks for: past this, "more than the console's scale dialog offers" is answer enough. */
export const headroomLimit = 64;

export interface Headroom {
  /** The profile the first further replica would run with; the model's first profile when none fits. */
  readonly profile: string;
  readonly moreReplicas: number;
  readonly nodes: readonly { node: string; replicas: number }[];
  /** Why no further replica fits, in placement's words; empty while the limit was reached. */
  readonly reasons: readonly string[];
}

/**
 * How many more replicas of one model fit on the fleet as it is, and where:
 * the placement pass itself, asked for up to `headroomLimit` replicas of the
 * model against the snapshot (with every running replica's cards taken), so
 * the answer is what a scale-up would get now. Pure: nothing is reserved.
 */
export function headroom(snapshot: Snapshot, model: { name: string; modelClass: ModelClass; profiles: readonly DemandProfile[] }, gpuMemoryUtilization: number): Headroom {
  const result = placeReplicas(snapshot, [{ model: model.name, modelClass: model.modelClass, count: headroomLimit, profiles: model.profiles }], { gpuMemoryUtilization });
  const perNode = new Map<string, number>();
  for (const placement of result.placements) perNode.set(placement.node, (perNode.get(placement.node) ?? 0) + 1);
  return {
    profile: result.placements[0]?.profile ?? model.profiles[0]?.name ?? "",
    moreReplicas: result.placements.length,
    nodes: [...perNode].map(([node, replicas]) => ({ node, replicas })).sort((left, right) => right.replicas - left.replicas || (left.node < right.node ? -1 : 1)),
    reasons: result.refusals.map((refusal) => refusal.reason),
  };
}
