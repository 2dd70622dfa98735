import type { DemandProfile, HeldReplica, Placement, ReplicaDemand, Snapshot } from "../placement/index.js";
import { placeReplicas } from "./placement-functions.js";
import type { Action, DesiredModel, ObservedReplica } from "./types.js";

/**
 * Where a replica's profile stands in its model's order of preference: 0 is
 * the model's first profile. A profile the model no longer lists ranks after
 * all of them, so any of the model's profiles is as good or better.
 */
export function profileRank(model: DesiredModel, replica: ObservedReplica): number {
  const index = model.profiles.findIndex((profile) => profile.name === replica.profile);
  return index < 0 ? model.profiles.length : index;
}

const isReady = (replica: ObservedReplica) => replica.state === "ready";

/**
 * The order replicas are given up in: those that serve nothing yet first,
 * then those on the worse profile (a scale-down keeps the model where it runs
 * best), then the newest.
 */
export function giveUpOrder(model: DesiredModel): (a: ObservedReplica, b: ObservedReplica) => number {
  return (a, b) => Number(isReady(a)) - Number(isReady(b)) || profileRank(model, b) - profileRank(model, a) || b.placedAtMs - a.placedAtMs || a.id.localeCompare(b.id);
}

/**
 * The order a restart withdraws its old replicas in once replacements serve:
 * the best-placed first. A replacement is started no worse than the
 * best-placed old replica still running, so the one it stands for is the
 * one to go; withdrawing a worse one first would hold the next replacement
 * to a profile better than the replica it replaces.
 */
export function restartOrder(model: DesiredModel): (a: ObservedReplica, b: ObservedReplica) => number {
  return (a, b) => Number(isReady(a)) - Number(isReady(b)) || profileRank(model, a) - profileRank(model, b) || b.placedAtMs - a.placedAtMs || a.id.localeCompare(b.id);
}

/**
 * The profiles a restart may start replacements on: none worse than the
 * best-placed replica it replaces. A change never moves a model to a worse
 * profile to make room (it waits for room, or was refused before it was made);
 * the profiles before it stay allowed, since a better one is a move up.
 */
export function profilesForReplacement(model: DesiredModel, replaced: readonly ObservedReplica[]): readonly DemandProfile[] {
  if (replaced.length === 0) return model.profiles;
  const best = Math.min(...replaced.map((replica) => profileRank(model, replica)));
  return model.profiles.slice(0, best + 1);
}

/**
 * Replicas on their way up on a better profile than a ready replica of the
 * same model: a move back to the preferred profile under way. They are not
 * surplus; the worse replica is, once they serve.
 */
export function promotingReplicas(model: DesiredModel, current: readonly ObservedReplica[]): ObservedReplica[] {
  const ready = current.filter((replica) => replica.managed && isReady(replica));
  if (ready.length === 0) return [];
  const worstReady = Math.max(...ready.map((replica) => profileRank(model, replica)));
  return current.filter((replica) => replica.managed && !isReady(replica) && profileRank(model, replica) < worstReady);
}

/**
 * The reason a surplus replica is withdrawn: a move back to the preferred
 * profile when a ready replica of a better profile stays, else a scale-down.
 */
export function surplusWithdrawal(model: DesiredModel, replica: ObservedReplica, kept: readonly ObservedReplica[], count: number): Pick<Extract<Action, { kind: "withdraw" }>, "reason" | "promotedTo"> {
  const better = isReady(replica) ? kept.filter((other) => isReady(other) && profileRank(model, other) < profileRank(model, replica)).sort((a, b) => profileRank(model, a) - profileRank(model, b))[0] : undefined;
  if (better) return { reason: `${model.name} moved back to its preferred profile ${better.profile}: replica ${better.id} serves there now`, promotedTo: better.profile };
  return { reason: `${model.name} needs ${count} replica${count === 1 ? "" : "s"} now` };
}

/** A model with every replica it wants, one of them ready on a worse profile than its first. */
export interface PromotionCandidate {
  readonly model: DesiredModel;
  readonly group: string;
  readonly replica: ObservedReplica;
}

/** The model's worst-placed ready replica, when it runs on a profile after the first; undefined otherwise. */
export function worstPlaced(model: DesiredModel, current: readonly ObservedReplica[]): ObservedReplica | undefined {
  const ready = current.filter((replica) => replica.managed && isReady(replica));
  const worst = [...ready].sort((a, b) => profileRank(model, b) - profileRank(model, a) || a.placedAtMs - b.placedAtMs)[0];
  return worst && profileRank(model, worst) > 0 ? worst : undefined;
}

/**
 * Moves back to the preferred profile, by surge: one replica per candidate on
 * a profile before the one its worst-placed replica runs on, placed after
 * everything else this pass placed (the snapshot holds those: room goes to
 * missing replicas first; a move preempts nothing). The worse replica is withdrawn once the new one
 * serves, as surplus.
 */
export function promotions(snapshot: Snapshot, candidates: readonly PromotionCandidate[]): Action[] {
  if (candidates.length === 0) return [];
  const byGroup = new Map(candidates.map((candidate) => [candidate.group, candidate]));
  const demands: ReplicaDemand[] = candidates.map(({ model, group, replica }) => ({
    model: group,
    modelClass: model.modelClass,
    count: 1,
    profiles: model.profiles.slice(0, profileRank(model, replica)),
  }));
  const result = placeReplicas(snapshot, demands);
  return result.placements.flatMap((placement): Action[] => {
    const candidate = byGroup.get(placement.model);
    if (!candidate) return [];
    const { model, replica } = candidate;
    return [
      {
        kind: "start",
        model: model.name,
        profile: placement.profile,
        node: placement.node,
        cards: placement.cards,
        reason: `moving ${model.name} back to its preferred profile ${placement.profile} from ${replica.profile}`,
        promotes: { id: replica.id, profile: replica.profile },
      },
    ];
  });
}

/** What this pass placed, as replicas holding their cards, so a move back to the preferred profile cannot take them. */
export function heldByPlacements(placements: readonly Placement[], profilesOf: (group: string) => readonly DemandProfile[] | undefined): HeldReplica[] {
  return placements.map((placement, index) => {
    const profile = profilesOf(placement.model)?.find((candidate) => candidate.name === placement.profile);
    return {
      id: `placed-this-pass-${index}`,
      model: placement.model,
      profile: placement.profile,
      node: placement.node,
      cards: placement.cards,
      memoryBytes: Math.max(0, profile?.memoryBytes ?? 0),
      cpuCores: Math.max(0, profile?.cpuCores ?? 0),
      modelClass: "standard",
    };
  });
}
