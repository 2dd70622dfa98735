import { usableBytes, formatGiB } from "../plan/index.js";
import type { DemandProfile } from "./types.js";
import type { CardGroup, WorkingNode } from "./working-snapshot.js";

/**
 * Filter plugins, as in the Kubernetes scheduler framework: each looks at one
 * node for one profile and answers "fits" (undefined) or why not. The first
 * filter that fails is the node's reason; refusals group nodes by it, so the
 * wording is written for a count ("3 have no free h100") and for one named
 * node ("gpu-1 has no free h100").
 *
 * Static filters depend only on what the node is (schedulable, engines, its
 * cards); capacity filters on what is free now. Preemption runs the static
 * ones as they are and the capacity ones against what stopping victims would
 * free, which is why capacity is passed in rather than read from the node.
 */
export interface NodeReason {
  /** After a count: "3 have no free h100". */
  readonly plural: string;
  /** After a node's name: "gpu-1 has no free h100". */
  readonly singular: string;
}

/** What is free on a node, now or after some replicas would stop. */
export interface NodeCapacity {
  freeCards(group: CardGroup): number;
  readonly freeMemoryBytes: number;
  readonly freeCpuCores: number;
}

export interface FilterContext {
  readonly profile: DemandProfile;
  /** The planner's share of each card an engine may use (usableBytes): one rule for plan and placement. */
  readonly gpuMemoryUtilization: number;
}

export interface StaticFilter {
  readonly name: string;
  check(node: WorkingNode, context: FilterContext): NodeReason | undefined;
}

export interface CapacityFilter {
  readonly name: string;
  check(node: WorkingNode, context: FilterContext, capacity: NodeCapacity): NodeReason | undefined;
}

function phrase(build: (have: string, need: string) => string): NodeReason {
  return { plural: build("have", "need"), singular: build("has", "needs") };
}

/** "h100" for a profile that names its class; "cards" when any class will do. */
function cardsLabel(profile: DemandProfile, count?: number): string {
  const noun = profile.cardClass ?? (count === 1 ? "card" : "cards");
  return count === undefined ? noun : `${count} ${noun}`;
}

/** Whether a card of this size holds one rank of the replica, by the planner's usable share of a card. */
export function cardHoldsReplica(cardMemoryBytes: number, context: FilterContext): boolean {
  const needs = context.profile.bytesPerCard;
  return needs === undefined || usableBytes(cardMemoryBytes, context.gpuMemoryUtilization) >= needs;
}

/** Whether a card of this class is one the profile asks for. */
export function classMatches(cardClass: string, profile: DemandProfile): boolean {
  return profile.cardClass === undefined || cardClass === profile.cardClass;
}

/**
 * The card groups of a node a replica of this profile could ever use: the
 * right class, cards large enough by the planner's arithmetic, and enough of
 * them on one fabric. Free cards are the capacity filters' business.
 */
export function eligibleGroups(node: WorkingNode, context: FilterContext): CardGroup[] {
  const profile = context.profile;
  return node.groups.filter((group) => classMatches(group.cardClass, profile) && cardHoldsReplica(group.cardMemoryBytes, context) && group.cards.length >= profile.gpus);
}

const usesCards = (context: FilterContext): boolean => context.profile.gpus > 0;

/**
 * How to say that cards cannot be used together: "on one fabric" when the
 * groups differ by fabric only (the usual case), else the whole rule.
 */
function together(groups: readonly CardGroup[]): string {
  const first = groups[0];
  const alike = groups.every((group) => group.cardClass === first?.cardClass && group.cardMemoryBytes === first.cardMemoryBytes);
  return alike ? "on one fabric" : "alike (one class, size and fabric)";
}

export const schedulableFilter: StaticFilter = {
  name: "schedulable",
  check(node) {
    if (node.source.schedulable) return undefined;
    const why = node.source.unschedulableReason ?? "not taking new replicas";
    return { plural: `are ${why}`, singular: `is ${why}` };
  },
};

export const engineFilter: StaticFilter = {
  name: "engine-installed",
  check(node, context) {
    const engine = context.profile.engine;
    return node.engines.has(engine) ? undefined : phrase((have) => `${have} no ${engine} installed`);
  },
};

export const cardClassFilter: StaticFilter = {
  name: "card-class",
  check(node, context) {
    if (!usesCards(context)) return undefined;
    if (node.groups.some((group) => classMatches(group.cardClass, context.profile))) return undefined;
    return phrase((have) => (context.profile.cardClass === undefined ? `${have} no GPUs` : `${have} no ${context.profile.cardClass} cards`));
  },
};

export const cardMemoryFilter: StaticFilter = {
  name: "card-memory",
  check(node, context) {
    const needs = context.profile.bytesPerCard;
    if (!usesCards(context) || needs === undefined) return undefined;
    const ofClass = node.groups.filter((group) => classMatches(group.cardClass, context.profile));
    // No card of the class at all is the card-class filter's reason.
    if (ofClass.length === 0 || ofClass.some((group) => cardHoldsReplica(group.cardMemoryBytes, context))) return undefined;
    const largest = Math.max(...ofClass.map((group) => usableBytes(group.cardMemoryBytes, context.gpuMemoryUtilization)));
    return phrase((have, need) => `${have} ${formatGiB(largest)} usable per card and ${need} ${formatGiB(needs)}`);
  },
};

export const cardsOnOneFabricFilter: StaticFilter = {
  name: "cards-on-one-fabric",
  check(node, context) {
    if (!usesCards(context)) return undefined;
    const profile = context.profile;
    const fitting = node.groups.filter((group) => classMatches(group.cardClass, profile) && cardHoldsReplica(group.cardMemoryBytes, context));
    if (fitting.length === 0) return undefined;
    const largest = Math.max(...fitting.map((group) => group.cards.length));
    if (largest >= profile.gpus) return undefined;
    const total = fitting.reduce((sum, group) => sum + group.cards.length, 0);
    const where = together(fitting);
    return total >= profile.gpus
      ? phrase((have, need) => `${have} ${cardsLabel(profile, total)} but at most ${largest} ${where}, and ${need} ${profile.gpus}`)
      : phrase((have, need) => `${have} ${cardsLabel(profile, total)} and ${need} ${profile.gpus}`);
  },
};

export const freeCardsFilter: CapacityFilter = {
  name: "free-cards",
  check(node, context, capacity) {
    if (!usesCards(context)) return undefined;
    const profile = context.profile;
    const groups = eligibleGroups(node, context);
    let total = 0;
    let most = 0;
    for (const group of groups) {
      const free = capacity.freeCards(group);
      total += free;
      most = Math.max(most, free);
    }
    if (most >= profile.gpus) return undefined;
    if (total === 0) return phrase((have) => `${have} no free ${cardsLabel(profile)}`);
    return total >= profile.gpus
      ? phrase((have, need) => `${have} ${total} free ${cardsLabel(profile)} but at most ${most} ${together(groups)}, and ${need} ${profile.gpus}`)
      : phrase((have, need) => `${have} ${total} free ${cardsLabel(profile)} and ${need} ${profile.gpus}`);
  },
};

export const hostMemoryFilter: CapacityFilter = {
  name: "host-memory",
  check(_node, context, capacity) {
    const needs = context.profile.memoryBytes;
    if (needs <= 0 || capacity.freeMemoryBytes >= needs) return undefined;
    return phrase((have, need) => `${have} ${formatGiB(Math.max(0, capacity.freeMemoryBytes))} free host memory and ${need} ${formatGiB(needs)}`);
  },
};

export const cpuCoresFilter: CapacityFilter = {
  name: "cpu-cores",
  check(_node, context, capacity) {
    const needs = context.profile.cpuCores;
    if (needs <= 0 || capacity.freeCpuCores >= needs) return undefined;
    return phrase((have, need) => `${have} ${Math.max(0, capacity.freeCpuCores)} free CPU cores and ${need} ${needs}`);
  },
};

/** In order: the first that fails names the node's reason. */
export const staticFilters: readonly StaticFilter[] = [schedulableFilter, engineFilter, cardClassFilter, cardMemoryFilter, cardsOnOneFabricFilter];
export const capacityFilters: readonly CapacityFilter[] = [freeCardsFilter, hostMemoryFilter, cpuCoresFilter];

export function currentCapacity(node: WorkingNode): NodeCapacity {
  return { freeCards: (group) => group.free.length, freeMemoryBytes: node.freeMemoryBytes, freeCpuCores: node.freeCpuCores };
}

export function staticReason(node: WorkingNode, context: FilterContext): NodeReason | undefined {
  for (const filter of staticFilters) {
    const reason = filter.check(node, context);
    if (reason) return reason;
  }
  return undefined;
}

export function capacityReason(node: WorkingNode, context: FilterContext, capacity: NodeCapacity): NodeReason | undefined {
  for (const filter of capacityFilters) {
    const reason = filter.check(node, context, capacity);
    if (reason) return reason;
  }
  return undefined;
}

/** Every filter, static then capacity, against what is free now. */
export function nodeReason(node: WorkingNode, context: FilterContext): NodeReason | undefined {
  return staticReason(node, context) ?? capacityReason(node, context, currentCapacity(node));
}

/**
 * The group a replica takes on a node that passed every filter: the one that
 * leaves the fewest free cards behind (best fit), so a fabric with eight free
 * cards stays whole for an eight-card model. Undefined for a CPU profile.
 */
export function bestFitGroup(node: WorkingNode, context: FilterContext, capacity: NodeCapacity = currentCapacity(node)): CardGroup | undefined {
  if (!usesCards(context)) return undefined;
  let best: CardGroup | undefined;
  let bestFree = Number.POSITIVE_INFINITY;
  for (const group of eligibleGroups(node, context)) {
    const free = capacity.freeCards(group);
    if (free >= context.profile.gpus && free < bestFree) {
      best = group;
      bestFree = free;
    }
  }
  return best;
}
