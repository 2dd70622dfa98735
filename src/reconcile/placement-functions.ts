import { choosePreemptions as chooseVictims, placeReplicas, preemptionGate, type ModelStanding } from "../placement/index.js";
import type { HeldReplica, ReplicaDemand, Snapshot } from "../placement/index.js";

export { placeReplicas, preemptionGate };

/**
 * The replicas to drain so that one replica of `demand` fits, by the class
 * rules of placement; none when no set of victims makes room (nothing is
 * preempted for nothing).
 */
export function victimsFor(snapshot: Snapshot, demand: ReplicaDemand, standings: ReadonlyMap<string, ModelStanding>): readonly HeldReplica[] {
  const choice = chooseVictims(snapshot, { ...demand, count: 1 }, standings);
  return choice.possible ? choice.victims : [];
}
