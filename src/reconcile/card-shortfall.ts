import type { ResolvedProfile } from "../catalog/index.js";
import type { Fleet } from "../fleet/index.js";
import { demandCardBytes } from "../placement/index.js";
import { formatGiB, usableBytes, type ModelFacts } from "../plan/index.js";

/** The cards of one class, fabric and size on one node: the most one replica can take there. */
export interface CardGroup {
  readonly node: string;
  readonly cardClass: string;
  readonly fabric: string;
  readonly cardMemoryBytes: number;
  readonly cards: number;
}

/**
 * Every node's card groups a profile may run on (its class, or any class when
 * it names none), lost nodes left out. A replica never spans two fabrics or
 * two nodes, so a node's cards are counted per group, never summed.
 */
export function profileCardGroups(fleet: Fleet, cardClass: string | undefined): CardGroup[] {
  return fleet.pools
    .filter((pool) => cardClass === undefined || pool.cardClass === cardClass)
    .flatMap((pool) => pool.nodes.map((node) => ({ node: node.name, cardClass: pool.cardClass, fabric: pool.fabric, cardMemoryBytes: pool.cardMemoryBytes, cards: node.cardsTotal })));
}

const plural = (count: number, noun: string) => `${count} ${noun}${count === 1 ? "" : "s"}`;

/**
 * Why the cards a profile could run on would not hold one replica of it at
 * `context` tokens: the planner's figures for the busiest card (weights,
 * runtime overhead, KV cache) against the largest card of a node with enough
 * of them. Undefined when it fits, when there is nothing to price (a CPU
 * profile, ComfyUI, an unknown quantisation) or when no node has the cards
 * (which the caller says in its own words).
 */
export function cardShortfall(facts: ModelFacts, profile: ResolvedProfile, context: number | undefined, fleet: Fleet, gpuMemoryUtilization: number): string | undefined {
  const bytes = demandCardBytes(facts, profile, context);
  if (bytes === undefined) return undefined;
  const eligible = profileCardGroups(fleet, profile.gpu_class).filter((group) => group.cards >= profile.gpus);
  const largest = eligible.reduce<(typeof eligible)[number] | undefined>((best, group) => (best === undefined || group.cardMemoryBytes > best.cardMemoryBytes ? group : best), undefined);
  if (largest === undefined) return undefined;
  const usable = usableBytes(largest.cardMemoryBytes, gpuMemoryUtilization);
  if (bytes.total <= usable) return undefined;
  const cardWord = profile.gpus === 1 ? "its card" : `each of its ${profile.gpus} cards`;
  return (
    `profile ${profile.name} (${profile.engine}, ${plural(profile.gpus, "card")}): ${cardWord} would need ${formatGiB(bytes.total)} ` +
    `(${formatGiB(bytes.weights)} weights, ${formatGiB(bytes.overhead)} runtime overhead, ${formatGiB(bytes.kvCache)} KV cache for ${bytes.kvTokens} tokens); ` +
    `the largest ${largest.cardClass} card has ${formatGiB(usable)} usable (${gpuMemoryUtilization.toFixed(2)} of ${formatGiB(largest.cardMemoryBytes)}): ${formatGiB(bytes.total - usable)} short`
  );
}
