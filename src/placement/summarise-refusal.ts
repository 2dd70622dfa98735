import { nodeReason, type FilterContext, type NodeReason } from "./node-filters.js";
import type { WorkingSnapshot } from "./working-snapshot.js";

/** Nodes counted by the reason each fails for. */
export class ReasonCounts {
  private readonly counts = new Map<string, { reason: NodeReason; count: number }>();
  fitting = 0;

  add(reason: NodeReason | undefined): void {
    if (!reason) {
      this.fitting += 1;
      return;
    }
    const entry = this.counts.get(reason.plural);
    if (entry) entry.count += 1;
    else this.counts.set(reason.plural, { reason, count: 1 });
  }

  /**
   * "0 of 5 nodes: 3 have no free h100, 2 have 36.0 GiB usable per card and
   * need 61.0 GiB": largest group first, then by text, so the same fleet
   * always reads the same.
   */
  describe(totalNodes: number): string {
    if (totalNodes === 0) return "0 of 0 nodes: no node has joined the fleet";
    const parts = [...this.counts.values()]
      .sort((left, right) => right.count - left.count || (left.reason.plural < right.reason.plural ? -1 : left.reason.plural > right.reason.plural ? 1 : 0))
      .map(({ reason, count }) => `${count} ${count === 1 ? reason.singular : reason.plural}`);
    return `${this.fitting} of ${totalNodes} ${totalNodes === 1 ? "node" : "nodes"}: ${parts.join(", ")}`;
  }
}

/**
 * Why no node takes a replica of a profile, in the planner's words: each node
 * counted under the first filter it fails. Read against the working copy as
 * it stands, so the counts are the fleet after everything placed before.
 */
export function summariseRefusal(working: WorkingSnapshot, context: FilterContext): string {
  const counts = new ReasonCounts();
  for (const node of working.nodes) counts.add(nodeReason(node, context));
  return counts.describe(working.totalNodes);
}
