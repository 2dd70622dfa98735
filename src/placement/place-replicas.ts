import { defaultGpuMemoryUtilization } from "../plan/index.js";
import { CapacityIndex } from "./capacity-index.js";
import { chooseGang, gangSize, summariseGangRefusal } from "./choose-gang.js";
import { chooseNode, type PlacementIndexes } from "./choose-node.js";
import { HostMemoryIndex } from "./host-memory-index.js";
import { classRank } from "./preemption-rules.js";
import { defaultScoreWeights, type ScoreWeights } from "./node-scores.js";
import { summariseRefusal } from "./summarise-refusal.js";
import type { DemandProfile, Placement, PlacementRefusal, PlacementResult, ReplicaDemand, Snapshot } from "./types.js";
import { WorkingSnapshot } from "./working-snapshot.js";

export interface PlacementOptions {
  /** The share of each card an engine may use; the same setting the planner is given. */
  readonly gpuMemoryUtilization?: number;
  /** Score weights; pack with spread by default. */
  readonly weights?: ScoreWeights;
}

/** Critical models are placed first, so what is left goes to the classes that give way. */
function compareDemands(left: ReplicaDemand, right: ReplicaDemand): number {
  return classRank[right.modelClass] - classRank[left.modelClass] || (left.model < right.model ? -1 : left.model > right.model ? 1 : 0);
}

/** A weight below 0 (or not a number) counts as 0: the indexes rely on higher spread and pack never scoring lower. */
function sanitisedWeights(weights: ScoreWeights): ScoreWeights {
  const clean = (weight: number) => (Number.isFinite(weight) && weight > 0 ? weight : 0);
  return { spread: clean(weights.spread), pack: clean(weights.pack) };
}

/** Profiles with the same needs get the same refusal text; computed once each. */
function profileShape(profile: DemandProfile): string {
  return [profile.engine, profile.cardClass ?? "", profile.gpus, profile.nodes ?? 1, profile.memoryBytes, profile.cpuCores, profile.bytesPerCard ?? ""].join("\u0000");
}

/**
 * Places replicas on the fleet, pure: the same snapshot and demands give the
 * same placements. Shaped like the Kubernetes scheduler: a working copy of the
 * snapshot, filters that each say fits or why not, weighted scores over what
 * passed, and each chosen replica's cards, memory and cores taken out of the
 * working copy before the next is placed.
 *
 * Demands go in class order (critical, standard, opportunistic), then by
 * model name. Each replica tries the model's profiles in order; a profile
 * that cannot be placed is skipped for the next, and, since a working copy
 * only loses capacity, is not tried again for that demand. What remains
 * unplaced is refused with the reason per profile, read against the fleet as
 * this call leaves it.
 *
 * A profile over several nodes places a gang (chooseGang): all its members
 * on one fabric, reserved together before the next replica is placed, and
 * its refusal summed up per fabric.
 */
export function placeReplicas(snapshot: Snapshot, demands: readonly ReplicaDemand[], options: PlacementOptions = {}): PlacementResult {
  const gpuMemoryUtilization = options.gpuMemoryUtilization ?? defaultGpuMemoryUtilization;
  const weights = sanitisedWeights(options.weights ?? defaultScoreWeights);
  const working = new WorkingSnapshot(snapshot);
  let hostMemory: HostMemoryIndex | undefined;
  const indexes: PlacementIndexes = {
    cards: new CapacityIndex(working),
    hostMemory: () => (hostMemory ??= new HostMemoryIndex(working)),
  };
  const placements: Placement[] = [];
  const unplacedDemands: { demand: ReplicaDemand; unplaced: number }[] = [];
  for (const demand of [...demands].sort(compareDemands)) {
    const count = Math.max(0, Math.floor(demand.count));
    const exhausted = new Set<number>();
    let placed = 0;
    for (; placed < count; placed += 1) {
      let chosen = false;
      for (const [position, profile] of demand.profiles.entries()) {
        if (exhausted.has(position)) continue;
        if (gangSize({ profile, gpuMemoryUtilization }) > 1) {
          const gang = chooseGang(working, demand.model, { profile, gpuMemoryUtilization });
          if (!gang) {
            exhausted.add(position);
            continue;
          }
          // Every member is reserved before the next demand is placed; none is reserved unless all were found.
          for (const member of gang.members) {
            working.reserve(member.node, { model: demand.model, group: member.group, cards: member.cards, memoryBytes: Math.max(0, profile.memoryBytes), cpuCores: Math.max(0, profile.cpuCores) });
          }
          const members = gang.members.map((member, rank) => ({ node: member.node.source.name, cards: member.cards, rank }));
          const leader = members[0];
          if (!leader) throw new Error("a gang was chosen without members");
          placements.push({ model: demand.model, profile: profile.name, node: leader.node, cards: leader.cards, members });
          chosen = true;
          break;
        }
        const choice = chooseNode(working, indexes, demand.model, { profile, gpuMemoryUtilization }, weights);
        if (!choice) {
          exhausted.add(position);
          continue;
        }
        working.reserve(choice.node, { model: demand.model, group: choice.group, cards: choice.cards, memoryBytes: Math.max(0, profile.memoryBytes), cpuCores: Math.max(0, profile.cpuCores) });
        placements.push({ model: demand.model, profile: profile.name, node: choice.node.source.name, cards: choice.cards });
        chosen = true;
        break;
      }
      if (!chosen) break;
    }
    if (placed < count) unplacedDemands.push({ demand, unplaced: count - placed });
  }
  const reasons = new Map<string, string>();
  const refusals: PlacementRefusal[] = unplacedDemands.map(({ demand, unplaced }) => {
    if (demand.profiles.length === 0) {
      return { model: demand.model, unplaced, reason: "the model has no profile to run it with: add one (engine, source, cards)" };
    }
    const perProfile = demand.profiles.map((profile) => {
      const shape = profileShape(profile);
      let reason = reasons.get(shape);
      if (reason === undefined) {
        const context = { profile, gpuMemoryUtilization };
        reason = gangSize(context) > 1 ? summariseGangRefusal(working, context) : summariseRefusal(working, context);
        reasons.set(shape, reason);
      }
      return demand.profiles.length === 1 ? reason : `profile ${profile.name}: ${reason}`;
    });
    return { model: demand.model, unplaced, reason: perProfile.join("; ") };
  });
  return { placements, refusals };
}
