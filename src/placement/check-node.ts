import { defaultGpuMemoryUtilization, usableBytes, formatGiB } from "../plan/index.js";
import { bestFitGroup, capacityReason, cardHoldsReplica, classMatches, currentCapacity, staticReason, type FilterContext } from "./node-filters.js";
import type { DemandProfile, Snapshot } from "./types.js";
import { WorkingSnapshot, type CardGroup, type WorkingNode } from "./working-snapshot.js";

export interface NodeCheckOptions {
  /** Cards chosen by hand; without them the best-fit free cards are chosen as placement would. */
  readonly cards?: readonly number[];
  readonly gpuMemoryUtilization?: number;
}

export type NodeCheck = { readonly fits: true; readonly cards: readonly number[] } | { readonly fits: false; readonly reason: string };

function refuse(reason: string): NodeCheck {
  return { fits: false, reason };
}

function cardList(cards: readonly number[]): string {
  return cards.length === 0 ? "none" : cards.join(", ");
}

function handPicked(node: WorkingNode, context: FilterContext, cards: readonly number[]): NodeCheck {
  const profile = context.profile;
  const name = node.source.name;
  if (cards.length !== profile.gpus) {
    return refuse(`the profile ${profile.name} takes ${profile.gpus} ${profile.gpus === 1 ? "card" : "cards"} and ${cards.length} ${cards.length === 1 ? "was" : "were"} given`);
  }
  const duplicate = cards.find((card, position) => cards.indexOf(card) !== position);
  if (duplicate !== undefined) return refuse(`card ${duplicate} is given twice`);
  const groupOf = new Map<number, CardGroup>();
  for (const group of node.groups) for (const card of group.cards) groupOf.set(card, group);
  const allCards = [...groupOf.keys()].sort((left, right) => left - right);
  const groups: CardGroup[] = [];
  for (const card of cards) {
    const group = groupOf.get(card);
    if (!group) return refuse(`${name} has no card ${card} (its cards: ${cardList(allCards)})`);
    if (!classMatches(group.cardClass, profile)) return refuse(`card ${card} of ${name} is a ${group.cardClass}, and the profile ${profile.name} runs on ${profile.cardClass}`);
    if (!cardHoldsReplica(group.cardMemoryBytes, context)) {
      return refuse(`card ${card} of ${name} has ${formatGiB(usableBytes(group.cardMemoryBytes, context.gpuMemoryUtilization))} usable and needs ${formatGiB(profile.bytesPerCard ?? 0)}`);
    }
    if (!group.free.includes(card)) {
      const holder = node.held.find((replica) => replica.cards.includes(card));
      return refuse(`card ${card} of ${name} is held by ${holder ? `replica ${holder.id} (${holder.model})` : "another replica"}`);
    }
    groups.push(group);
  }
  const first = groups[0];
  const other = groups.find((group) => group !== first);
  if (first && other) {
    const what = first.fabric !== other.fabric ? `on fabrics ${first.fabric} and ${other.fabric}` : `of ${formatGiB(first.cardMemoryBytes)} and ${formatGiB(other.cardMemoryBytes)}`;
    return refuse(`cards ${cardList(cards)} of ${name} are ${what}: a replica's cards must be alike and share one fabric`);
  }
  return { fits: true, cards: [...cards] };
}

/**
 * Whether one replica of a profile fits on one named node now, through the
 * same filters placement uses, so a replica started by hand
 * (`ctl replica start --node`) can neither over-commit a card nor land where
 * placement would refuse it. With hand-picked cards, checks those; without,
 * answers the cards placement would choose on that node.
 */
export function checkNode(snapshot: Snapshot, profile: DemandProfile, nodeName: string, options: NodeCheckOptions = {}): NodeCheck {
  const working = new WorkingSnapshot(snapshot);
  const node = working.node(nodeName);
  if (!node) {
    const names = working.nodes.map((each) => each.source.name);
    return refuse(`no node is named ${nodeName} (nodes: ${names.length > 0 ? names.join(", ") : "none has joined"})`);
  }
  const context: FilterContext = { profile, gpuMemoryUtilization: options.gpuMemoryUtilization ?? defaultGpuMemoryUtilization };
  const fixed = staticReason(node, context);
  if (fixed) return refuse(`${nodeName} ${fixed.singular}`);
  if (options.cards !== undefined) {
    const picked = handPicked(node, context, options.cards);
    if (!picked.fits) return picked;
    // Host memory and cores still apply; the cards were checked one by one.
    const capacity = capacityReason(node, { ...context, profile: { ...profile, gpus: 0 } }, currentCapacity(node));
    return capacity ? refuse(`${nodeName} ${capacity.singular}`) : picked;
  }
  const capacity = capacityReason(node, context, currentCapacity(node));
  if (capacity) return refuse(`${nodeName} ${capacity.singular}`);
  const group = bestFitGroup(node, context);
  return { fits: true, cards: group ? group.free.slice(0, profile.gpus) : [] };
}
