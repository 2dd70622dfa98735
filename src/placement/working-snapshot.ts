import type { EngineName } from "../catalog/index.js";
import { cardMemoryForLlmgw } from "../fleet/index.js";
import type { HeldReplica, Snapshot, SnapshotNode } from "./types.js";

/**
 * The cards of one node that a replica may use together: one GPU class, one
 * fabric, one card size. A replica's cards all come from one group, because
 * tensor-parallel traffic that leaves a fabric (or a machine) is what makes a
 * "fitting" replica unusably slow, and a mixed-size set runs at the smallest
 * card's memory.
 */
export interface CardGroup {
  /** Position over the whole working copy, in node-name order: the capacity index's tie-break. */
  readonly id: number;
  readonly node: WorkingNode;
  readonly cardClass: string;
  readonly fabric: string;
  readonly cardMemoryBytes: number;
  /** Every card of the group, lowest index first. */
  readonly cards: readonly number[];
  /** The cards no replica holds, lowest index first. */
  free: number[];
}

/** One node in the working copy: what is left of it as replicas are assumed onto it. */
export interface WorkingNode {
  /** Position in name order. */
  readonly position: number;
  readonly source: SnapshotNode;
  readonly engines: ReadonlySet<EngineName>;
  readonly groups: readonly CardGroup[];
  /** Host memory and cores not held; below 0 when stored replicas over-commit the node. */
  freeMemoryBytes: number;
  freeCpuCores: number;
  /** Replicas per model on this node, for spreading a model's replicas. */
  readonly modelReplicas: Map<string, number>;
  /** The replicas that hold resources here, in id order (what preemption may stop). */
  readonly held: HeldReplica[];
}

export interface Reservation {
  readonly model: string;
  readonly group: CardGroup | undefined;
  readonly cards: readonly number[];
  readonly memoryBytes: number;
  readonly cpuCores: number;
}

/** Told of every change an index keeps itself current with. */
export interface WorkingSnapshotListener {
  /** A group's free cards changed; `freeBefore` is the count it had. */
  cardsChanged?(group: CardGroup, freeBefore: number): void;
  /** A node's free host memory changed; `memoryBefore` is what it had. */
  memoryChanged?(node: WorkingNode, memoryBefore: number): void;
}

function groupKeyOf(cardClass: string, fabric: string, memoryBytes: number): string {
  return `${cardClass}\u0000${fabric}\u0000${memoryBytes}`;
}

const byName = (left: { name: string }, right: { name: string }): number => (left.name < right.name ? -1 : left.name > right.name ? 1 : 0);

/**
 * A mutable copy of the fleet snapshot for one placement call: the
 * Kubernetes scheduler's "assume" step. Each replica chosen is taken out of it
 * before the next is placed, so two replicas of one cycle never count the
 * same free card. The snapshot itself is never changed.
 *
 * Stored data is taken as it is, never thrown on: a replica naming a node or
 * card that is not in the snapshot holds nothing, a card held twice is simply
 * held, and a node listed twice counts once (its first entry).
 */
export class WorkingSnapshot {
  readonly nodes: readonly WorkingNode[];
  readonly totalNodes: number;
  private readonly byName = new Map<string, WorkingNode>();
  /** Per model: how many nodes hold 1, 2, ... of its replicas. */
  private readonly spreadOfModel = new Map<string, Map<number, number>>();
  private readonly listeners: WorkingSnapshotListener[] = [];

  constructor(snapshot: Snapshot) {
    const unique: SnapshotNode[] = [];
    const seen = new Set<string>();
    for (const node of snapshot.nodes) {
      if (seen.has(node.name)) continue;
      seen.add(node.name);
      unique.push(node);
    }
    unique.sort(byName);
    let groupId = 0;
    const nodes: WorkingNode[] = [];
    for (const [position, source] of unique.entries()) {
      const drafts = new Map<string, { cardClass: string; fabric: string; cardMemoryBytes: number; cards: number[] }>();
      const seenCards = new Set<number>();
      for (const card of source.cards) {
        if (seenCards.has(card.index)) continue;
        seenCards.add(card.index);
        // Cards partly held by other processes have less room, so they group apart from their untouched twins.
        const room = cardMemoryForLlmgw(card.memoryBytes, card.foreignBytes);
        const key = groupKeyOf(card.cardClass, card.fabric, room);
        let draft = drafts.get(key);
        if (!draft) {
          draft = { cardClass: card.cardClass, fabric: card.fabric, cardMemoryBytes: room, cards: [] };
          drafts.set(key, draft);
        }
        draft.cards.push(card.index);
      }
      const groups: CardGroup[] = [];
      const node: WorkingNode = {
        position,
        source,
        engines: new Set(source.engines),
        groups,
        freeMemoryBytes: source.memoryBytes,
        freeCpuCores: source.cpuCores,
        modelReplicas: new Map(),
        held: [],
      };
      const ordered = [...drafts.entries()].sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0));
      for (const [, draft] of ordered) {
        const cards = [...draft.cards].sort((left, right) => left - right);
        groups.push({ id: groupId, node, cardClass: draft.cardClass, fabric: draft.fabric, cardMemoryBytes: draft.cardMemoryBytes, cards, free: [...cards] });
        groupId += 1;
      }
      nodes.push(node);
      this.byName.set(source.name, node);
    }
    this.nodes = nodes;
    this.totalNodes = nodes.length;
    const replicas = [...snapshot.replicas].sort((left, right) => (left.id < right.id ? -1 : left.id > right.id ? 1 : 0));
    for (const replica of replicas) {
      const node = this.byName.get(replica.node);
      if (!node) continue;
      node.held.push(replica);
      const held = new Set(replica.cards);
      for (const group of node.groups) {
        if (group.free.some((card) => held.has(card))) group.free = group.free.filter((card) => !held.has(card));
      }
      // Not clamped at 0: on an over-committed node, stopping one replica
      // must not seem to free more than the node is short.
      node.freeMemoryBytes -= Math.max(0, replica.memoryBytes);
      node.freeCpuCores -= Math.max(0, replica.cpuCores);
      this.countReplica(node, replica.model, 1);
    }
  }

  node(name: string): WorkingNode | undefined {
    return this.byName.get(name);
  }

  /** The distinct numbers of the model's replicas the nodes holding it have, lowest first (including ones assumed in this call). */
  replicaCountsOf(model: string): number[] {
    const counts = this.spreadOfModel.get(model);
    return counts ? [...counts.keys()].sort((left, right) => left - right) : [];
  }

  listen(listener: WorkingSnapshotListener): void {
    this.listeners.push(listener);
  }

  /** Takes the reservation's cards, memory and cores out of the node (assume). */
  reserve(node: WorkingNode, reservation: Reservation): void {
    const group = reservation.group;
    if (group && reservation.cards.length > 0) {
      const taken = new Set(reservation.cards);
      const before = group.free.length;
      group.free = group.free.filter((card) => !taken.has(card));
      for (const listener of this.listeners) listener.cardsChanged?.(group, before);
    }
    if (reservation.memoryBytes !== 0) {
      const before = node.freeMemoryBytes;
      node.freeMemoryBytes -= reservation.memoryBytes;
      for (const listener of this.listeners) listener.memoryChanged?.(node, before);
    }
    node.freeCpuCores -= reservation.cpuCores;
    this.countReplica(node, reservation.model, 1);
  }

  private countReplica(node: WorkingNode, model: string, change: number): void {
    const before = node.modelReplicas.get(model) ?? 0;
    const after = before + change;
    let spread = this.spreadOfModel.get(model);
    if (!spread) {
      spread = new Map();
      this.spreadOfModel.set(model, spread);
    }
    if (before > 0) {
      const nodes = (spread.get(before) ?? 0) - 1;
      if (nodes > 0) spread.set(before, nodes);
      else spread.delete(before);
    }
    if (after > 0) {
      node.modelReplicas.set(model, after);
      spread.set(after, (spread.get(after) ?? 0) + 1);
    } else {
      node.modelReplicas.delete(model);
    }
  }
}
