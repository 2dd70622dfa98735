import { defaultGpuMemoryUtilization } from "../plan/index.js";
import { nodeReason } from "./node-filters.js";
import type { DemandProfile, Snapshot } from "./types.js";
import { WorkingSnapshot } from "./working-snapshot.js";

/** What one node could run of a model: the profile it would take, or why it takes none. */
export interface NodeHosting {
  readonly node: string;
  /** The first of the model's profiles, in its order of preference, this node could run; undefined when none. */
  readonly profile: string | undefined;
  /** Why each profile before the chosen one (every profile, when none is chosen) cannot run there: "has no h100 cards". */
  readonly refusals: readonly { readonly profile: string; readonly reason: string }[];
}

/**
 * Which of a model's profiles each node could host: placement's own
 * filters (schedulable, engine, card class, card memory, cards on one
 * fabric, host memory and cores), with the node's whole capacity, as if
 * nothing else ran there. That is the node's pool membership, not whether
 * there is room now: weights fetched ahead (`ctl model pull`) are for the
 * replica that lands there later, whatever runs there today.
 */
export function hostingProfiles(snapshot: Snapshot, profiles: readonly DemandProfile[], gpuMemoryUtilization = defaultGpuMemoryUtilization): NodeHosting[] {
  // In the snapshot's order, which the caller chose (the fleet lists nodes by name).
  const empty = new WorkingSnapshot({ nodes: snapshot.nodes, replicas: [] });
  return snapshot.nodes.map(({ name }) => {
    const node = empty.node(name);
    const refusals: { profile: string; reason: string }[] = [];
    if (!node) return { node: name, profile: undefined, refusals };
    for (const profile of profiles) {
      const reason = nodeReason(node, { profile, gpuMemoryUtilization });
      if (!reason) return { node: name, profile: profile.name, refusals };
      refusals.push({ profile: profile.name, reason: reason.singular });
    }
    return { node: name, profile: undefined, refusals };
  });
}
