import type { CatalogModel } from "../catalog/index.js";
import { fleetFromNodes, type InventoryNode } from "../fleet/index.js";
import type { ModelFacts } from "../plan/index.js";
import { fitsNowhere } from "../reconcile/index.js";
import type { ModelFactsReader } from "./model-facts-cache.js";

/** Why a model would fit nowhere in this fleet (every profile too large for every node of its class, even empty); undefined when it might fit. */
export type FitsNowhereCheck = (model: CatalogModel) => Promise<string | undefined>;

/**
 * Reads the model's files (the planner's reader) and the fleet as it is, and
 * asks the pure `fitsNowhere`. A source that cannot be read leaves its
 * profile undecided: the model is then stored, as it would have been.
 */
export function fitsNowhereCheck(parts: { readFacts: ModelFactsReader; inventoryNodes: () => Promise<readonly InventoryNode[]>; gpuMemoryUtilization: number }): FitsNowhereCheck {
  return async (model) => {
    const sources = [...new Set(model.profiles.filter((profile) => profile.gpus > 0 && profile.engine !== "comfyui").map((profile) => profile.source))];
    if (sources.length === 0) return undefined;
    const read = await Promise.all(sources.map(async (source) => [source, await parts.readFacts(source).catch(() => undefined)] as const));
    const factsOf = new Map(read.filter((pair): pair is readonly [string, ModelFacts] => pair[1] !== undefined));
    return fitsNowhere(model, factsOf, fleetFromNodes(await parts.inventoryNodes()), parts.gpuMemoryUtilization);
  };
}
