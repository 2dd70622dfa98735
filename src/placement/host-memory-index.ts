import type { WorkingNode, WorkingSnapshot } from "./working-snapshot.js";

/** Over-committed nodes (below 0) rank with full ones: the pack score reads them alike. */
const keyOf = (memory: number): number => Math.max(0, memory);

/**
 * Schedulable nodes in order of free host memory (then name), for CPU
 * replicas: the best fit is the first node from the replica's need on that
 * the per-node filters accept, found by bisection instead of filtering every
 * node for every replica. Kept current as replicas take memory.
 */
export class HostMemoryIndex {
  private readonly sorted: WorkingNode[];

  constructor(working: WorkingSnapshot) {
    this.sorted = working.nodes
      .filter((node) => node.source.schedulable)
      .sort((left, right) => keyOf(left.freeMemoryBytes) - keyOf(right.freeMemoryBytes) || left.position - right.position);
    working.listen({
      memoryChanged: (node, memoryBefore) => {
        if (!node.source.schedulable) return;
        const from = this.lowerBound(node, keyOf(memoryBefore), memoryBefore);
        if (this.sorted[from] === node) this.sorted.splice(from, 1);
        this.sorted.splice(this.lowerBound(node, keyOf(node.freeMemoryBytes), memoryBefore), 0, node);
      },
    });
  }

  /**
   * Position of the first entry not ordered before (memory, node's name).
   * While a change is being applied, `node` still sits at its old memory,
   * `memoryBefore`; every other entry sits at its current memory.
   */
  private lowerBound(node: WorkingNode, memory: number, memoryBefore: number): number {
    let low = 0;
    let high = this.sorted.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      const entry = this.sorted[middle] as WorkingNode;
      const entryMemory = keyOf(entry === node ? memoryBefore : entry.freeMemoryBytes);
      if (entryMemory < memory || (entryMemory === memory && entry.position < node.position)) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  /** The node with the least free memory, at least `memoryBytes`, that `accept` takes; on a tie, the first by name. */
  bestFit(memoryBytes: number, accept: (node: WorkingNode) => boolean): WorkingNode | undefined {
    let low = 0;
    let high = this.sorted.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (keyOf((this.sorted[middle] as WorkingNode).freeMemoryBytes) < memoryBytes) low = middle + 1;
      else high = middle;
    }
    for (let position = low; position < this.sorted.length; position += 1) {
      const node = this.sorted[position] as WorkingNode;
      if (accept(node)) return node;
    }
    return undefined;
  }
}
