import { capacityReason, classMatches, eligibleGroups, staticReason, type FilterContext, type NodeCapacity } from "./node-filters.js";
import type { CardGroup, WorkingNode, WorkingSnapshot } from "./working-snapshot.js";

/**
 * A replica over several nodes is a gang, placed as the Kubernetes
 * coscheduling plugin places a pod group: N nodes of the profile's class on
 * one fabric, each with the profile's cards free in one group (and its host
 * memory and cores), chosen together and reserved together, or not at all.
 * Nothing is reserved until every member is found, so a gang that does not
 * fit leaves no partial reservation behind.
 */

export interface GangMemberChoice {
  readonly node: WorkingNode;
  readonly group: CardGroup;
  readonly cards: readonly number[];
}

/** Members in rank order: the first is the leader. */
export interface GangChoice {
  readonly fabric: string;
  readonly members: readonly GangMemberChoice[];
}

/** Nodes per replica a demand profile asks for. */
export function gangSize(context: FilterContext): number {
  return Math.max(1, Math.floor(context.profile.nodes ?? 1));
}

export interface MemberOption {
  readonly node: WorkingNode;
  readonly group: CardGroup;
  /** Free cards the member would leave behind in its group. */
  readonly leftover: number;
}

/**
 * Every node that could hold one member, by fabric, given what is free
 * (`capacityOf`: now, or after stopping victims). A node passes the same
 * filters a one-node replica passes; its member takes the fullest group
 * that has the cards (best fit), per fabric.
 */
export function memberOptions(
  working: WorkingSnapshot,
  context: FilterContext,
  capacityOf: (node: WorkingNode) => NodeCapacity,
  enough: (list: readonly MemberOption[]) => boolean = () => false,
): Map<string, MemberOption[]> {
  const byFabric = new Map<string, MemberOption[]>();
  const profile = context.profile;
  for (const node of working.nodes) {
    const capacity = capacityOf(node);
    // The cheap test first: most nodes of a busy fleet have no group with the cards free.
    if (!node.engines.has(profile.engine) || !node.groups.some((group) => capacity.freeCards(group) >= profile.gpus && classMatches(group.cardClass, profile))) continue;
    if (staticReason(node, context)) continue;
    if (capacityReason(node, context, capacity)) continue;
    const best = new Map<string, MemberOption>();
    for (const group of eligibleGroups(node, context)) {
      const free = capacity.freeCards(group);
      if (free < context.profile.gpus) continue;
      const option = { node, group, leftover: free - context.profile.gpus };
      const current = best.get(group.fabric);
      if (!current || option.leftover < current.leftover) best.set(group.fabric, option);
    }
    for (const [fabric, option] of best) {
      let list = byFabric.get(fabric);
      if (!list) {
        list = [];
        byFabric.set(fabric, list);
      }
      list.push(option);
      if (enough(list)) return new Map([[fabric, list]]);
    }
  }
  return byFabric;
}

/**
 * Members preferred: whole free nodes first (the member takes every free
 * card of its group and the node holds nothing else), then the least left
 * behind, then nodes holding fewer of the model's replicas, then by name.
 */
function isWhole(option: MemberOption): boolean {
  return option.leftover === 0 && option.group.free.length === option.group.cards.length && option.node.held.length === 0;
}

function compareOptions(model: string): (left: MemberOption, right: MemberOption) => number {
  const whole = (option: MemberOption) => (isWhole(option) ? 0 : 1);
  return (left, right) =>
    whole(left) - whole(right) ||
    left.leftover - right.leftover ||
    (left.node.modelReplicas.get(model) ?? 0) - (right.node.modelReplicas.get(model) ?? 0) ||
    left.node.position - right.node.position;
}

/**
 * The gang for one replica, or undefined when no fabric has enough nodes.
 * The first fabric (in node-name order) to offer enough whole free nodes
 * ends the search: nothing beats it. Otherwise, among fabrics with enough
 * nodes, the one whose members leave the fewest cards behind (then the
 * fewest nodes broken into), then the first by name.
 */
export function chooseGang(working: WorkingSnapshot, model: string, context: FilterContext): GangChoice | undefined {
  const size = gangSize(context);
  const options = memberOptions(
    working,
    context,
    (node) => ({ freeCards: (group) => group.free.length, freeMemoryBytes: node.freeMemoryBytes, freeCpuCores: node.freeCpuCores }),
    (list) => list.filter(isWhole).length >= size,
  );
  let best: { fabric: string; chosen: MemberOption[]; leftover: number; broken: number } | undefined;
  for (const fabric of [...options.keys()].sort()) {
    const list = options.get(fabric) ?? [];
    if (list.length < size) continue;
    const chosen = [...list].sort(compareOptions(model)).slice(0, size);
    const leftover = chosen.reduce((sum, option) => sum + option.leftover, 0);
    const broken = chosen.filter((option) => !isWhole(option)).length;
    if (!best || leftover < best.leftover || (leftover === best.leftover && broken < best.broken)) best = { fabric, chosen, leftover, broken };
  }
  if (!best) return undefined;
  return {
    fabric: best.fabric,
    members: best.chosen.map((option) => ({ node: option.node, group: option.group, cards: option.group.free.slice(0, context.profile.gpus) })),
  };
}

/**
 * Why no gang fits, summed up per fabric: "0/3 fabrics: ib0 has 1 node with
 * 8 free h100 of the 2 needed; pcie has no h100". Read against the working
 * copy as it stands.
 */
export function summariseGangRefusal(working: WorkingSnapshot, context: FilterContext): string {
  const profile = context.profile;
  const size = gangSize(context);
  const label = profile.cardClass ?? "cards";
  const fabrics = new Map<string, boolean>();
  for (const node of working.nodes) {
    for (const group of node.groups) fabrics.set(group.fabric, (fabrics.get(group.fabric) ?? false) || classMatches(group.cardClass, profile));
  }
  if (fabrics.size === 0) return "0/0 fabrics: no node with cards has joined the fleet";
  const options = memberOptions(working, context, (node) => ({ freeCards: (group) => group.free.length, freeMemoryBytes: node.freeMemoryBytes, freeCpuCores: node.freeCpuCores }));
  const parts = [...fabrics.entries()]
    .sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0))
    .map(([fabric, hasClass]) => {
      if (!hasClass) return `${fabric} has no ${label}`;
      const count = options.get(fabric)?.length ?? 0;
      return `${fabric} has ${count} ${count === 1 ? "node" : "nodes"} with ${profile.gpus} free ${label} of the ${size} needed`;
    });
  const fitting = [...options.values()].filter((list) => list.length >= size).length;
  return `${fitting}/${fabrics.size} ${fabrics.size === 1 ? "fabric" : "fabrics"}: ${parts.join("; ")}`;
}
