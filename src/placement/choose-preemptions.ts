import { defaultGpuMemoryUtilization } from "../plan/index.js";
import { bestFitGroup, capacityReason, eligibleGroups, staticReason, type FilterContext, type NodeCapacity } from "./node-filters.js";
import { ReasonCounts } from "./summarise-refusal.js";
import { gangSize, memberOptions, summariseGangRefusal, type MemberOption } from "./choose-gang.js";
import type { ModelClass } from "../catalog/index.js";
import { classRank, replicasItMayTake, type ModelStanding } from "./preemption-rules.js";
import type { DemandProfile, HeldReplica, Placement, ReplicaDemand, Snapshot } from "./types.js";
import { WorkingSnapshot, type CardGroup, type WorkingNode } from "./working-snapshot.js";

export interface PreemptionOptions {
  readonly gpuMemoryUtilization?: number;
}

/**
 * Either the replicas to stop (drain first, then stop) and where the new
 * replica goes once they have, or why no choice of victims makes room.
 */
export type PreemptionChoice =
  | { readonly possible: true; readonly placement: Placement; readonly victims: readonly HeldReplica[] }
  | { readonly possible: false; readonly reason: string };

/** Subsets of victims tried on one node before settling for a greedy choice: bounds the work on a crowded node. */
const subsetBudget = 20_000;

interface Candidate {
  readonly replica: HeldReplica;
  readonly rank: number;
}

/** The cost of a set of victims, compared in order: the highest class stopped, how many, the classes summed. */
interface Cost {
  readonly highestRank: number;
  readonly count: number;
  readonly rankSum: number;
}

function costOf(victims: readonly Candidate[]): Cost {
  let highestRank = -1;
  let rankSum = 0;
  for (const victim of victims) {
    highestRank = Math.max(highestRank, victim.rank);
    rankSum += victim.rank;
  }
  return { highestRank, count: victims.length, rankSum };
}

function compareCost(left: Cost, right: Cost): number {
  return left.highestRank - right.highestRank || left.count - right.count || left.rankSum - right.rankSum;
}

/** What the node would have free with `victims` stopped. A card another replica also holds stays taken. */
function capacityWithout(node: WorkingNode, victims: readonly Candidate[]): NodeCapacity & { released: Map<CardGroup, number[]> } {
  const stopping = new Set(victims.map((victim) => victim.replica));
  const stillHeld = new Set<number>();
  for (const replica of node.held) if (!stopping.has(replica)) for (const card of replica.cards) stillHeld.add(card);
  const released = new Map<CardGroup, number[]>();
  let memory = node.freeMemoryBytes;
  let cores = node.freeCpuCores;
  for (const victim of victims) {
    memory += Math.max(0, victim.replica.memoryBytes);
    cores += Math.max(0, victim.replica.cpuCores);
  }
  for (const group of node.groups) {
    const free = new Set(group.free);
    const cards = victims.flatMap((victim) => victim.replica.cards).filter((card) => group.cards.includes(card) && !free.has(card) && !stillHeld.has(card));
    if (cards.length > 0) released.set(group, [...new Set(cards)]);
  }
  return {
    freeCards: (group) => group.free.length + (released.get(group)?.length ?? 0),
    freeMemoryBytes: memory,
    freeCpuCores: cores,
    released,
  };
}

function withinLimits(victims: readonly Candidate[], limits: ReadonlyMap<string, number>): boolean {
  const counts = new Map<string, number>();
  for (const victim of victims) {
    const count = (counts.get(victim.replica.model) ?? 0) + 1;
    if (count > (limits.get(victim.replica.model) ?? 0)) return false;
    counts.set(victim.replica.model, count);
  }
  return true;
}

interface NodeSolution {
  readonly node: WorkingNode;
  readonly victims: readonly Candidate[];
  readonly cost: Cost;
}

/** Calls `visit` with every k-subset of `pool`, in order, until it returns false or the budget runs out. */
function forEachSubset(pool: readonly Candidate[], size: number, budget: { left: number }, visit: (subset: Candidate[]) => boolean): void {
  const picked: number[] = [];
  const walk = (start: number): boolean => {
    if (picked.length === size) {
      budget.left -= 1;
      return visit(picked.map((position) => pool[position] as Candidate)) && budget.left > 0;
    }
    for (let position = start; position <= pool.length - (size - picked.length); position += 1) {
      picked.push(position);
      const go = walk(position + 1);
      picked.pop();
      if (!go) return false;
    }
    return true;
  };
  walk(0);
}

/**
 * A lower bound on how many victims make room for the cards: in each usable
 * group, the fewest candidates whose cards there cover what is short.
 * Memory and cores are left out, so it never says more than needed.
 */
function fewestVictimsForCards(node: WorkingNode, context: FilterContext, pool: readonly Candidate[]): number {
  if (context.profile.gpus <= 0) return 0;
  let fewest = Number.POSITIVE_INFINITY;
  for (const group of eligibleGroups(node, context)) {
    const short = context.profile.gpus - group.free.length;
    if (short <= 0) return 0;
    const freeing = pool
      .map((candidate) => candidate.replica.cards.filter((card) => group.cards.includes(card)).length)
      .filter((cards) => cards > 0)
      .sort((left, right) => right - left);
    let freed = 0;
    for (const [position, cards] of freeing.entries()) {
      freed += cards;
      if (freed >= short) {
        fewest = Math.min(fewest, position + 1);
        break;
      }
    }
  }
  return fewest;
}

/**
 * The cheapest victims on one node that make the replica fit, or undefined
 * when none do or none beat `cutoff` (the best found on an earlier node,
 * which keeps a tie). Tries the lowest classes alone first, then fewer
 * victims before more, from the fewest the cards could possibly take; past
 * the subset budget, takes victims greedily (lowest class, most cards) and
 * drops any the rest do not need.
 */
function cheapestOnNode(node: WorkingNode, context: FilterContext, candidates: readonly Candidate[], limits: ReadonlyMap<string, number>, cutoff: Cost | undefined): Candidate[] | undefined {
  const fits = (victims: readonly Candidate[]) => withinLimits(victims, limits) && capacityReason(node, context, capacityWithout(node, victims)) === undefined;
  if (fits([])) return [];
  for (let tier = 0; tier <= classRank.critical; tier += 1) {
    if (cutoff && tier > cutoff.highestRank) return undefined;
    const pool = candidates.filter((candidate) => candidate.rank <= tier);
    if (pool.length === 0 || !fits(greedy(pool, limits))) continue;
    const budget = { left: subsetBudget };
    for (let size = Math.max(1, fewestVictimsForCards(node, context, pool)); size <= pool.length && budget.left > 0; size += 1) {
      if (cutoff && tier === cutoff.highestRank) {
        // The pool is sorted by class: its first `size` give the lowest sum a set of this size can have.
        const lowestSum = pool.slice(0, size).reduce((sum, candidate) => sum + candidate.rank, 0);
        if (size > cutoff.count || (size === cutoff.count && lowestSum >= cutoff.rankSum)) return undefined;
      }
      let best: Candidate[] | undefined;
      let bestCost: Cost | undefined;
      forEachSubset(pool, size, budget, (subset) => {
        if (fits(subset)) {
          const cost = costOf(subset);
          if (!bestCost || compareCost(cost, bestCost) < 0) {
            best = subset;
            bestCost = cost;
          }
        }
        return true;
      });
      if (best) return best;
    }
    return trimmed(greedy(pool, limits), fits);
  }
  return undefined;
}

/** Every candidate the per-model limits allow, in the pool's order. */
function greedy(pool: readonly Candidate[], limits: ReadonlyMap<string, number>): Candidate[] {
  const counts = new Map<string, number>();
  const chosen: Candidate[] = [];
  for (const candidate of pool) {
    const count = (counts.get(candidate.replica.model) ?? 0) + 1;
    if (count > (limits.get(candidate.replica.model) ?? 0)) continue;
    counts.set(candidate.replica.model, count);
    chosen.push(candidate);
  }
  return chosen;
}

/** Drops victims from the most valuable end while the rest still make room. */
function trimmed(victims: Candidate[], fits: (victims: readonly Candidate[]) => boolean): Candidate[] {
  let kept = [...victims];
  for (let position = kept.length - 1; position >= 0; position -= 1) {
    const without = kept.filter((_, index) => index !== position);
    if (fits(without)) kept = without;
  }
  return kept;
}

/**
 * How many replicas of each other model `demand` may stop, by the class
 * rules, and where each holder stands. A replica whose model the caller did
 * not describe (removed from the catalog, say) stands at its own class with
 * no minimum to protect.
 */
function victimLimits(snapshot: Snapshot, demand: ReplicaDemand, models: ReadonlyMap<string, ModelStanding>): { limits: Map<string, number>; standing: (replica: HeldReplica) => ModelStanding } {
  const taker: ModelStanding = { ...(models.get(demand.model) ?? { min: 0, replicas: 0 }), modelClass: demand.modelClass };
  const limits = new Map<string, number>();
  const heldCounts = new Map<string, number>();
  for (const replica of snapshot.replicas) heldCounts.set(replica.model, (heldCounts.get(replica.model) ?? 0) + 1);
  const standing = (replica: HeldReplica): ModelStanding =>
    models.get(replica.model) ?? { modelClass: replica.modelClass, min: 0, replicas: heldCounts.get(replica.model) ?? 0 };
  for (const replica of snapshot.replicas) {
    if (replica.model === demand.model || limits.has(replica.model)) continue;
    limits.set(replica.model, replicasItMayTake(taker, standing(replica)));
  }
  return { limits, standing };
}

/**
 * A test, built once per snapshot, of whether the class rules let a demand
 * stop any running replica at all; when not, no node search can find
 * victims. The reconciler asks it before each refused demand's search:
 * building the working copy of a 500-node fleet for each of 2,000 refused
 * models (a fleet not yet reported after a restart) held the server's core
 * for minutes, and even the per-demand limits alone cost seconds a pass.
 *
 * It may say yes where the search then finds nothing (it does not know
 * which victims earlier demands of the pass took, nor exclude the demand's
 * own model), never no where the search would find victims.
 */
export function preemptionGate(snapshot: Snapshot, models: ReadonlyMap<string, ModelStanding>): (demand: ReplicaDemand) => boolean {
  const heldCounts = new Map<string, number>();
  const classOf = new Map<string, ModelClass>();
  for (const replica of snapshot.replicas) {
    heldCounts.set(replica.model, (heldCounts.get(replica.model) ?? 0) + 1);
    if (!classOf.has(replica.model)) classOf.set(replica.model, replica.modelClass);
  }
  let lowestHeldRank = Number.POSITIVE_INFINITY;
  const classesAboveMinimum = new Set<ModelClass>();
  for (const [model, count] of heldCounts) {
    const holder = models.get(model) ?? { modelClass: classOf.get(model) ?? "opportunistic", min: 0, replicas: count };
    if (holder.replicas > 0) lowestHeldRank = Math.min(lowestHeldRank, classRank[holder.modelClass]);
    if (holder.replicas - holder.min > 0) classesAboveMinimum.add(holder.modelClass);
  }
  return (demand) => {
    if (classRank[demand.modelClass] > lowestHeldRank) return true;
    const taker = models.get(demand.model) ?? { min: 0, replicas: 0 };
    return taker.replicas < taker.min && classesAboveMinimum.has(demand.modelClass);
  };
}

/**
 * Preemption, as its own pure pass over the same snapshot as placement: which
 * running replicas to stop so that one replica of `demand` fits on one node.
 *
 * Only what the class rules allow is a candidate (replicasItMayTake): a higher
 * class takes from lower ones; within a class, a model below its minimum takes
 * what another grew into above its own minimum. Among nodes and sets of
 * victims it chooses the lowest highest class stopped (an opportunistic
 * replica before any standard one, as the Kubernetes scheduler prefers its
 * lowest-priority victims), then the fewest victims, then the first node by
 * name. Profiles are tried in the model's order.
 *
 * The caller drains the victims (requests in flight finish) before it stops
 * them, and starts the new replica on the cards returned once they are free.
 */
export function choosePreemptions(snapshot: Snapshot, demand: ReplicaDemand, models: ReadonlyMap<string, ModelStanding>, options: PreemptionOptions = {}): PreemptionChoice {
  const gpuMemoryUtilization = options.gpuMemoryUtilization ?? defaultGpuMemoryUtilization;
  const working = new WorkingSnapshot(snapshot);
  const { limits, standing } = victimLimits(snapshot, demand, models);
  const reasons: string[] = [];
  for (const profile of demand.profiles) {
    const context: FilterContext = { profile, gpuMemoryUtilization };
    if (gangSize(context) > 1) {
      const gang = gangPreemption(working, demand.model, context, limits, standing);
      if (typeof gang !== "string") return { possible: true, ...gang };
      reasons.push(demand.profiles.length === 1 ? gang : `profile ${profile.name}: ${gang}`);
      continue;
    }
    let best: NodeSolution | undefined;
    const nodeReasons = new ReasonCounts();
    for (const node of working.nodes) {
      // Nothing beats a node where it fits without stopping anything.
      if (best && best.cost.count === 0) break;
      const fixed = staticReason(node, context);
      if (fixed) {
        nodeReasons.add(fixed);
        continue;
      }
      const candidates = relevantCandidates(node, context, limits, standing);
      const victims = cheapestOnNode(node, context, candidates, limits, best?.cost);
      if (victims === undefined && best) continue;
      if (!victims) {
        // Every allowed victim stopped and still short (else a set of victims would have been found).
        const short = capacityReason(node, context, capacityWithout(node, greedy(candidates, limits)));
        const after = `even after stopping every replica a ${demand.modelClass} model may take`;
        nodeReasons.add(short ? { plural: `${short.plural} ${after}`, singular: `${short.singular} ${after}` } : { plural: "hold nothing it may stop", singular: "holds nothing it may stop" });
        continue;
      }
      const cost = costOf(victims);
      if (!best || compareCost(cost, best.cost) < 0) best = { node, victims, cost };
    }
    if (best) return { possible: true, victims: best.victims.map((victim) => victim.replica), placement: placementOn(best, demand.model, profile, context) };
    const text = nodeReasons.describe(working.totalNodes);
    reasons.push(demand.profiles.length === 1 ? text : `profile ${profile.name}: ${text}`);
  }
  if (demand.profiles.length === 0) return { possible: false, reason: "the model has no profile to run it with: add one (engine, source, cards)" };
  return { possible: false, reason: `no room even by preemption: ${reasons.join("; ")}` };
}

/** Replicas on the node the rules allow stopping and that free something the profile needs, lowest class first. */
function relevantCandidates(node: WorkingNode, context: FilterContext, limits: ReadonlyMap<string, number>, standing: (replica: HeldReplica) => ModelStanding): Candidate[] {
  const profile: DemandProfile = context.profile;
  const cards = new Set(eligibleGroups(node, context).flatMap((group) => group.cards));
  const needsMemory = profile.memoryBytes > 0 && node.freeMemoryBytes < profile.memoryBytes;
  const needsCores = profile.cpuCores > 0 && node.freeCpuCores < profile.cpuCores;
  return node.held
    // A gang's member is never stopped alone: that would fail the whole replica for one node's cards.
    .filter((replica) => (replica.gangNodes ?? 1) <= 1)
    .filter((replica) => (limits.get(replica.model) ?? 0) > 0)
    .filter((replica) => replica.cards.some((card) => cards.has(card)) || (needsMemory && replica.memoryBytes > 0) || (needsCores && replica.cpuCores > 0))
    .map((replica) => ({ replica, rank: classRank[standing(replica).modelClass] }))
    .sort((left, right) => left.rank - right.rank || right.replica.cards.length - left.replica.cards.length || (left.replica.id < right.replica.id ? -1 : 1));
}

function placementOn(solution: NodeSolution, model: string, profile: DemandProfile, context: FilterContext): Placement {
  const capacity = capacityWithout(solution.node, solution.victims);
  const group = bestFitGroup(solution.node, context, capacity);
  const cards = group ? [...group.free, ...(capacity.released.get(group) ?? [])].sort((left, right) => left - right).slice(0, profile.gpus) : [];
  return { model, profile: profile.name, node: solution.node.source.name, cards };
}

/**
 * Preemption for a gang: victims only on the nodes that become its members,
 * and only when every member then fits on one fabric. Each node's cheapest
 * victims are found as for one replica; per fabric the cheapest nodes are
 * taken while the victims together stay within the class rules' limits.
 * Among fabrics: the lowest highest class stopped, then the fewest victims.
 */
function gangPreemption(
  working: WorkingSnapshot,
  model: string,
  context: FilterContext,
  limits: ReadonlyMap<string, number>,
  standing: (replica: HeldReplica) => ModelStanding,
): { placement: Placement; victims: readonly HeldReplica[] } | string {
  const size = gangSize(context);
  const perNode = new Map<WorkingNode, Candidate[]>();
  for (const node of working.nodes) {
    if (staticReason(node, context)) continue;
    const victims = cheapestOnNode(node, context, relevantCandidates(node, context, limits, standing), limits, undefined);
    if (victims) perNode.set(node, victims);
  }
  const none: NodeCapacity = { freeCards: () => 0, freeMemoryBytes: Number.NEGATIVE_INFINITY, freeCpuCores: Number.NEGATIVE_INFINITY };
  const options = memberOptions(working, context, (node) => {
    const victims = perNode.get(node);
    return victims ? capacityWithout(node, victims) : none;
  });
  let best: { members: MemberOption[]; victims: Candidate[]; cost: Cost; fabric: string } | undefined;
  for (const fabric of [...options.keys()].sort()) {
    const ranked = (options.get(fabric) ?? [])
      .map((option) => ({ option, victims: perNode.get(option.node) ?? [] }))
      .sort((left, right) => compareCost(costOf(left.victims), costOf(right.victims)) || left.option.node.position - right.option.node.position);
    const members: MemberOption[] = [];
    let victims: Candidate[] = [];
    for (const { option, victims: own } of ranked) {
      if (members.length === size) break;
      if (!withinLimits([...victims, ...own], limits)) continue;
      members.push(option);
      victims = [...victims, ...own];
    }
    if (members.length < size) continue;
    const cost = costOf(victims);
    if (!best || compareCost(cost, best.cost) < 0) best = { members, victims, cost, fabric };
  }
  if (!best) return `${summariseGangRefusal(working, context)}, and stopping what a replica of this class may stop does not make room on enough nodes of one fabric`;
  const victimsOf = (node: WorkingNode) => perNode.get(node) ?? [];
  const members = best.members.map(({ node, group }, rank) => {
    const capacity = capacityWithout(node, victimsOf(node));
    const cards = [...group.free, ...(capacity.released.get(group) ?? [])].sort((left, right) => left - right).slice(0, context.profile.gpus);
    return { node: node.source.name, cards, rank };
  });
  const leader = members[0];
  if (!leader) throw new Error("a gang was chosen without members");
  return {
    placement: { model, profile: context.profile.name, node: leader.node, cards: leader.cards, members },
    victims: best.victims.map((victim) => victim.replica),
  };
}
