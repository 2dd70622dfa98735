import type { CardGroup, WorkingNode, WorkingSnapshot } from "./working-snapshot.js";

/** A set of small integers (card group ids) kept in order, with O(1) add and remove. */
class OrderedIdSet {
  private readonly words: Uint32Array;
  size = 0;

  constructor(capacity: number) {
    this.words = new Uint32Array(Math.ceil(capacity / 32) || 1);
  }

  add(id: number): void {
    const word = id >>> 5;
    const bit = 1 << (id & 31);
    const current = this.words[word] ?? 0;
    if ((current & bit) !== 0) return;
    this.words[word] = current | bit;
    this.size += 1;
  }

  delete(id: number): void {
    const word = id >>> 5;
    const bit = 1 << (id & 31);
    const current = this.words[word] ?? 0;
    if ((current & bit) === 0) return;
    this.words[word] = current & ~bit;
    this.size -= 1;
  }

  /** The smallest id at or after `from`, or -1. */
  next(from: number): number {
    let word = from >>> 5;
    if (word >= this.words.length) return -1;
    // Clear the bits below `from` in its own word.
    let bits = (this.words[word] ?? 0) & (~0 << (from & 31));
    for (;;) {
      if (bits !== 0) return (word << 5) + (31 - Math.clz32(bits & -bits));
      word += 1;
      if (word >= this.words.length) return -1;
      bits = this.words[word] ?? 0;
    }
  }
}

interface ClassBuckets {
  readonly cardClass: string;
  readonly cardMemoryBytes: number;
  /** byFree[n]: groups with exactly n free cards. */
  readonly byFree: OrderedIdSet[];
}

/**
 * Free capacity indexed by (GPU class, card size, free cards in the group),
 * so finding the best-fit group for a replica looks at the few groups with
 * just enough free cards instead of every node of the fleet: placing 10,000
 * replicas on 1,000 nodes stays near linear instead of 10 million node
 * checks. Within one free count, groups are kept in node-name order, so the
 * answer is the one a full scan with the same tie-break would give.
 *
 * Unschedulable nodes are left out; the caller's `accept` applies the
 * per-node filters the index does not know (engine, host memory, cores).
 */
export class CapacityIndex {
  private readonly buckets = new Map<string, ClassBuckets>();
  private readonly groups: CardGroup[] = [];

  constructor(working: WorkingSnapshot) {
    let groupCount = 0;
    for (const node of working.nodes) groupCount += node.groups.length;
    for (const node of working.nodes) {
      for (const group of node.groups) {
        this.groups[group.id] = group;
        if (!node.source.schedulable) continue;
        const key = `${group.cardClass}\u0000${group.cardMemoryBytes}`;
        let entry = this.buckets.get(key);
        if (!entry) {
          entry = { cardClass: group.cardClass, cardMemoryBytes: group.cardMemoryBytes, byFree: [] };
          this.buckets.set(key, entry);
        }
        while (entry.byFree.length <= group.cards.length) entry.byFree.push(new OrderedIdSet(groupCount));
        entry.byFree[group.free.length]?.add(group.id);
      }
    }
    working.listen({
      cardsChanged: (group, freeBefore) => {
        if (!group.node.source.schedulable) return;
        const entry = this.buckets.get(`${group.cardClass}\u0000${group.cardMemoryBytes}`);
        entry?.byFree[freeBefore]?.delete(group.id);
        entry?.byFree[group.free.length]?.add(group.id);
      },
    });
  }

  /**
   * The group with the fewest free cards, at least `cards`, among the classes
   * and card sizes `eligible` admits, whose node `accept` takes; on a tie,
   * the first by node name.
   */
  bestFit(cards: number, eligible: (cardClass: string, cardMemoryBytes: number) => boolean, accept: (node: WorkingNode) => boolean): CardGroup | undefined {
    const entries = [...this.buckets.values()].filter((entry) => eligible(entry.cardClass, entry.cardMemoryBytes));
    const most = entries.reduce((max, entry) => Math.max(max, entry.byFree.length - 1), 0);
    for (let free = Math.max(cards, 1); free <= most; free += 1) {
      let best: CardGroup | undefined;
      for (const entry of entries) {
        const set = entry.byFree[free];
        if (!set || set.size === 0) continue;
        for (let id = set.next(0); id >= 0 && (best === undefined || id < best.id); id = set.next(id + 1)) {
          const group = this.groups[id];
          if (group && accept(group.node)) {
            best = group;
            break;
          }
        }
      }
      if (best) return best;
    }
    return undefined;
  }
}
