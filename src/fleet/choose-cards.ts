import type { CardInventory } from "../protocol/index.js";

/**
 * The cards a hand-started replica gets when the request names none: the
 * lowest free indices, of the profile's class when it names one. Returns
 * undefined when too few are free. (Placement proper, across nodes, is the
 * placement module's; this serves `POST /api/v1/replicas` on one named node.)
 */
export function chooseCards(gpus: readonly CardInventory[], used: ReadonlySet<number>, count: number, cardClass: string | undefined): number[] | undefined {
  if (count === 0) return [];
  const free = gpus
    .filter((gpu) => !used.has(gpu.index) && (cardClass === undefined || gpu.class === cardClass))
    .map((gpu) => gpu.index)
    .sort((left, right) => left - right);
  return free.length >= count ? free.slice(0, count) : undefined;
}
