import type { ModelClass } from "../catalog/schema.js";
import type { DemandProfile, HeldReplica, Placement, PlacementRefusal, PlacementResult, ReplicaDemand, Snapshot, SnapshotNode } from "../placement/types.js";

/*
 * A stand-in for src/placement while that folder is built in parallel: the
 * same contract (placement/types.ts), first fit with packing and spreading,
 * and a class-only preemption pass. It checks the card count, the class, the
 * engine, host memory and cores; the planner's per-card fit is placement's.
 * The reconciler imports it through one file (reconcile/placement-functions.ts)
 * so the real functions replace it in one line.
 */

interface FreeNode {
  readonly node: SnapshotNode;
  freeCards: number[];
  freeMemory: number;
  freeCores: number;
  models: Set<string>;
}

function freeNodes(snapshot: Snapshot): FreeNode[] {
  return snapshot.nodes.map((node) => {
    const held = snapshot.replicas.filter((replica) => replica.node === node.name);
    const used = new Set(held.flatMap((replica) => replica.cards));
    return {
      node,
      freeCards: node.cards.map((card) => card.index).filter((index) => !used.has(index)),
      freeMemory: node.memoryBytes - held.reduce((sum, replica) => sum + replica.memoryBytes, 0),
      freeCores: node.cpuCores - held.reduce((sum, replica) => sum + replica.cpuCores, 0),
      models: new Set(held.map((replica) => replica.model)),
    };
  });
}

function why(free: FreeNode, profile: DemandProfile): string | undefined {
  if (!free.node.schedulable) return free.node.unschedulableReason ?? "not schedulable";
  if (!free.node.engines.includes(profile.engine)) return `no ${profile.engine}`;
  if (free.freeMemory < profile.memoryBytes) return "too little free host memory";
  if (free.freeCores < profile.cpuCores) return "too few free cores";
  const matching = free.freeCards.filter((index) => {
    const card = free.node.cards.find((candidate) => candidate.index === index);
    return profile.gpuClass === undefined || card?.gpuClass === profile.gpuClass;
  });
  if (matching.length < profile.gpus) return profile.gpus === 1 ? `no free ${profile.gpuClass ?? "card"}` : `fewer than ${profile.gpus} free ${profile.gpuClass ?? "cards"}`;
  return undefined;
}

function cardsFor(free: FreeNode, profile: DemandProfile): number[] {
  const matching = free.freeCards.filter((index) => {
    const card = free.node.cards.find((candidate) => candidate.index === index);
    return profile.gpuClass === undefined || card?.gpuClass === profile.gpuClass;
  });
  // One fabric per replica: the first fabric with enough matching cards.
  const byFabric = new Map<string, number[]>();
  for (const index of matching) {
    const fabric = free.node.cards.find((card) => card.index === index)?.fabric ?? "";
    byFabric.set(fabric, [...(byFabric.get(fabric) ?? []), index]);
  }
  for (const cards of byFabric.values()) if (cards.length >= profile.gpus) return cards.slice(0, profile.gpus);
  return [];
}

function summarise(reasons: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const reason of reasons) counts.set(reason, (counts.get(reason) ?? 0) + 1);
  const parts = [...counts.entries()].map(([reason, count]) => `${count} ${count === 1 ? "has" : "have"} ${reason}`.replace(/ (has|have) (not schedulable|cordoned|lost|draining|settling)/, " $2"));
  return `0 of ${reasons.length} node${reasons.length === 1 ? "" : "s"}: ${parts.join(", ") || "no nodes have joined"}`;
}

export function placeReplicas(snapshot: Snapshot, demands: readonly ReplicaDemand[]): PlacementResult {
  const frees = freeNodes(snapshot);
  const placements: Placement[] = [];
  const refusals: PlacementRefusal[] = [];
  for (const demand of demands) {
    let unplaced = 0;
    let lastReason = "";
    for (let n = 0; n < demand.count; n += 1) {
      let placed = false;
      const reasons: string[] = [];
      for (const profile of demand.profiles) {
        const fits = frees.filter((free) => why(free, profile) === undefined && cardsFor(free, profile).length === profile.gpus);
        // Spread a model's replicas, then pack: the node with the fewest free cards that still fits.
        fits.sort((a, b) => Number(a.models.has(demand.model)) - Number(b.models.has(demand.model)) || a.freeCards.length - b.freeCards.length || a.node.name.localeCompare(b.node.name));
        const chosen = fits[0];
        if (!chosen) {
          reasons.push(...frees.map((free) => why(free, profile) ?? `no ${profile.gpus} free cards on one fabric`));
          continue;
        }
        const cards = cardsFor(chosen, profile);
        chosen.freeCards = chosen.freeCards.filter((index) => !cards.includes(index));
        chosen.freeMemory -= profile.memoryBytes;
        chosen.freeCores -= profile.cpuCores;
        chosen.models.add(demand.model);
        placements.push({ model: demand.model, profile: profile.name, node: chosen.node.name, cards });
        placed = true;
        break;
      }
      if (!placed) {
        unplaced += 1;
        lastReason = summarise(reasons.slice(0, frees.length));
      }
    }
    if (unplaced > 0) refusals.push({ model: demand.model, unplaced, reason: lastReason });
  }
  return { placements, refusals };
}

const rank: Record<ModelClass, number> = { opportunistic: 0, standard: 1, critical: 2 };

/**
 * Replicas of lower classes whose cards, once freed, let one replica of the
 * demand fit on one node: the fewest victims, lowest class first. Empty when
 * no such set exists (nothing is preempted for nothing).
 */
export function choosePreemptions(snapshot: Snapshot, demand: ReplicaDemand): HeldReplica[] {
  let best: HeldReplica[] | undefined;
  const cost = (victims: readonly HeldReplica[]) => Math.max(...victims.map((victim) => rank[victim.modelClass])) * 1000 + victims.length;
  for (const node of snapshot.nodes) {
    if (!node.schedulable) continue;
    const candidates = snapshot.replicas
      .filter((replica) => replica.node === node.name && rank[replica.modelClass] < rank[demand.modelClass])
      .sort((a, b) => rank[a.modelClass] - rank[b.modelClass] || a.id.localeCompare(b.id));
    const victims: HeldReplica[] = [];
    for (const victim of candidates) {
      victims.push(victim);
      const without = { nodes: [node], replicas: snapshot.replicas.filter((replica) => replica.node === node.name && !victims.includes(replica)) };
      if (placeReplicas(without, [{ ...demand, count: 1 }]).placements.length === 1) {
        // The cheapest set over all nodes: the lowest class given up, then the fewest replicas.
        if (best === undefined || cost(victims) < cost(best)) best = [...victims];
        break;
      }
    }
  }
  return best ?? [];
}
