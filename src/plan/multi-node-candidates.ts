import type { Pool } from "../fleet/index.js";
import { cardCounts, evaluate, planPoolOf, type Slot } from "./evaluate-candidate.js";
import type { EngineKind } from "./memory.js";
import type { ModelFacts } from "./model-facts.js";
import type { PlanCandidate } from "./plan-types.js";
import type { Quantization } from "./weights.js";

/**
 * Replicas that span nodes: N nodes × G cards of one pool (one GPU class and
 * card size on one fabric — a replica never crosses fabrics, its ranks talk
 * over that fabric). vLLM runs tensor parallel G inside each node and
 * pipeline parallel N across them; SGLang runs tensor parallel N×G.
 *
 * Offered only where needed: a model one node of the pool can hold is never
 * split over a network unless nodes are asked for. Unasked, each card count
 * and quantisation gets the fewest nodes that hold it (or, when none do, the
 * most the pool has, as a miss that says what is still short).
 */

/** The most nodes one replica is planned over: past this the pipeline bubbles and the network dominate. */
export const maxNodesPerReplica = 8;

/** Nodes of the pool with at least `cards` cards, and those with `cards` free. */
function nodesWith(pool: Pool, cards: number): { total: number; free: number } {
  let total = 0;
  let free = 0;
  for (const node of pool.nodes) {
    if (node.cardsTotal >= cards) total += 1;
    if (node.cardsFree >= cards) free += 1;
  }
  return { total, free };
}

function multiNodeSlot(pool: Pool, cards: number, nodes: number): Slot {
  const counts = nodesWith(pool, cards);
  let unavailable: string | undefined;
  if (counts.total < nodes) {
    unavailable = `the pool has ${counts.total} node${counts.total === 1 ? "" : "s"} with ${cards} cards on ${pool.fabric}, ${nodes} needed`;
  } else if (counts.free < nodes) {
    unavailable = `${counts.free} node${counts.free === 1 ? "" : "s"} of the pool ${counts.free === 1 ? "has" : "have"} ${cards} free cards, ${nodes} needed`;
  }
  return { pool: planPoolOf(pool), cardMemoryBytes: pool.cardMemoryBytes, cards, nodes, onCpu: false, unavailable };
}

export interface MultiNodeRequest {
  readonly facts: ModelFacts;
  readonly pool: Pool;
  readonly quantizations: readonly Quantization[];
  readonly utilization: number;
  readonly requested: number | undefined;
  /** Nodes asked for (--nodes); undefined to find the fewest that fit. */
  readonly nodes: number | undefined;
}

const engines: readonly EngineKind[] = ["vllm", "sglang"];

export function multiNodeCandidates(request: MultiNodeRequest): PlanCandidate[] {
  const { facts, pool, quantizations, utilization, requested } = request;
  const largest = pool.nodes.reduce((most, node) => Math.max(most, node.cardsTotal), 0);
  const candidates: PlanCandidate[] = [];
  for (const cards of cardCounts) {
    if (cards > largest) continue;
    const poolNodes = nodesWith(pool, cards).total;
    for (const engine of engines) {
      for (const quantization of quantizations) {
        const evaluateAt = (nodes: number): PlanCandidate => evaluate(facts, multiNodeSlot(pool, cards, nodes), engine, quantization, utilization, requested);
        // Memory decides the node count; free cards only make a layout that fits unavailable now.
        const fitsIdle = (nodes: number): boolean =>
          evaluate(facts, { ...multiNodeSlot(pool, cards, nodes), unavailable: undefined }, engine, quantization, utilization, requested).fits;
        if (request.nodes !== undefined) {
          candidates.push(evaluateAt(request.nodes));
          continue;
        }
        const most = Math.min(poolNodes, maxNodesPerReplica);
        if (most < 2) continue;
        let chosen = most;
        for (let nodes = 2; nodes <= most; nodes += 1) {
          if (fitsIdle(nodes)) {
            chosen = nodes;
            break;
          }
        }
        candidates.push(evaluateAt(chosen));
      }
    }
  }
  return candidates;
}
