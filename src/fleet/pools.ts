import { cardMemoryForLlmgw } from "./card-memory.js";
import type { HardwareSpec } from "./hardware-spec.js";

/**
 * The fleet as the planner and placement see it: GPU pools and CPU hosts.
 *
 * A pool is the set of nodes whose cards can be treated as interchangeable:
 * same GPU class, same fabric, same card memory. Memory is part of the key
 * because one class ships in several sizes (A100 40/80 GB, H100 80/94 GB):
 * a plan that fits an 80 GB card must not be offered on a 40 GB one.
 *
 * A replica's cards always come from one node of one pool (tensor parallel
 * traffic stays on one fabric inside one machine), so each pool keeps its
 * nodes apart instead of summing their cards.
 */
export interface PoolNode {
  readonly name: string;
  readonly cardsTotal: number;
  readonly cardsFree: number;
}

export interface Pool {
  readonly cardClass: string;
  readonly fabric: string;
  readonly cardMemoryBytes: number;
  readonly nodes: readonly PoolNode[];
}

export interface CpuNode {
  readonly name: string;
  readonly memoryBytes: number;
  readonly cpuCores: number;
}

export interface Fleet {
  readonly pools: readonly Pool[];
  /** Host memory of every usable node, for engines that run on CPUs (llama.cpp). */
  readonly cpuNodes: readonly CpuNode[];
}

/** The plain node inventory the server keeps (S3); the planner needs nothing more. */
export interface InventoryCard {
  readonly index: number;
  readonly class: string;
  readonly memoryBytes: number;
  /** Held by processes llmgw did not start; the planner leaves it out of the card's room. */
  readonly foreignBytes?: number | undefined;
  readonly fabric: string;
  readonly free: boolean;
}

export interface InventoryNode {
  readonly name: string;
  /** "ready", "lost", ...: lost nodes are left out, their cards cannot be placed on. */
  readonly state: string;
  readonly gpus: readonly InventoryCard[];
  readonly memoryBytes: number;
  readonly cpuCores: number;
}

interface PoolDraft {
  cardClass: string;
  fabric: string;
  cardMemoryBytes: number;
  nodes: Map<string, { cardsTotal: number; cardsFree: number }>;
}

function poolKey(cardClass: string, fabric: string, cardMemoryBytes: number): string {
  return `${cardClass}\u0000${fabric}\u0000${cardMemoryBytes}`;
}

function addCards(
  drafts: Map<string, PoolDraft>,
  card: { cardClass: string; fabric: string; cardMemoryBytes: number },
  nodeName: string,
  total: number,
  free: number,
): void {
  const key = poolKey(card.cardClass, card.fabric, card.cardMemoryBytes);
  let draft = drafts.get(key);
  if (!draft) {
    draft = { ...card, nodes: new Map() };
    drafts.set(key, draft);
  }
  const node = draft.nodes.get(nodeName) ?? { cardsTotal: 0, cardsFree: 0 };
  node.cardsTotal += total;
  node.cardsFree += free;
  draft.nodes.set(nodeName, node);
}

function finish(drafts: Map<string, PoolDraft>): Pool[] {
  const pools = [...drafts.values()].map((draft) => ({
    cardClass: draft.cardClass,
    fabric: draft.fabric,
    cardMemoryBytes: draft.cardMemoryBytes,
    nodes: [...draft.nodes.entries()].map(([name, counts]) => ({ name, ...counts })),
  }));
  // Stable order for output and tests: larger cards first, then by name.
  return pools.sort(
    (a, b) =>
      b.cardMemoryBytes - a.cardMemoryBytes ||
      a.cardClass.localeCompare(b.cardClass) ||
      a.fabric.localeCompare(b.fabric),
  );
}

/**
 * A what-if fleet from `--gpus`. Each GPU group is one node (or NODES alike
 * nodes), all cards free. A group without `@fabric` is alone on its own
 * fabric, named after its first node, so two unlabelled groups never pool
 * their cards into one replica; the nodes of one group share it.
 */
export function fleetFromHardwareSpec(spec: HardwareSpec): Fleet {
  const drafts = new Map<string, PoolDraft>();
  let nodeNumber = 0;
  for (const group of spec.groups) {
    const fabric = group.fabric ?? `node-${nodeNumber + 1}`;
    for (let member = 0; member < group.nodes; member += 1) {
      nodeNumber += 1;
      const nodeName = `node-${nodeNumber}`;
      addCards(
        drafts,
        { cardClass: group.cardClass, fabric, cardMemoryBytes: cardMemoryForLlmgw(group.memoryBytes, group.foreignBytes) },
        nodeName,
        group.count,
        group.count,
      );
    }
  }
  const cpuNodes: CpuNode[] = spec.host ? [{ name: "cpu-1", memoryBytes: spec.host.memoryBytes, cpuCores: spec.host.cpuCores }] : [];
  return { pools: finish(drafts), cpuNodes };
}

/** The live fleet from the server's node inventory; lost nodes are excluded. */
export function fleetFromNodes(nodes: readonly InventoryNode[]): Fleet {
  const drafts = new Map<string, PoolDraft>();
  const cpuNodes: CpuNode[] = [];
  for (const node of nodes) {
    if (node.state === "lost") continue;
    for (const gpu of node.gpus) {
      addCards(
        drafts,
        { cardClass: gpu.class, fabric: gpu.fabric, cardMemoryBytes: cardMemoryForLlmgw(gpu.memoryBytes, gpu.foreignBytes) },
        node.name,
        1,
        gpu.free ? 1 : 0,
      );
    }
    if (node.memoryBytes > 0) cpuNodes.push({ name: node.name, memoryBytes: node.memoryBytes, cpuCores: node.cpuCores });
  }
  return { pools: finish(drafts), cpuNodes };
}

/** The most cards one replica can take in this pool: the largest node's free cards. */
export function largestFreeOnOneNode(pool: Pool): number {
  return pool.nodes.reduce((largest, node) => Math.max(largest, node.cardsFree), 0);
}

/** The largest node's total cards: what the pool could offer once it is idle. */
export function largestNode(pool: Pool): number {
  return pool.nodes.reduce((largest, node) => Math.max(largest, node.cardsTotal), 0);
}

export function poolCardsTotal(pool: Pool): number {
  return pool.nodes.reduce((sum, node) => sum + node.cardsTotal, 0);
}

export function poolCardsFree(pool: Pool): number {
  return pool.nodes.reduce((sum, node) => sum + node.cardsFree, 0);
}
