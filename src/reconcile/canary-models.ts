import { resolveModel, type CatalogModel, entryAtRevision } from "../catalog/index.js";
import type { CanaryRow } from "../store/index.js";

/**
 * Each running canary as the model it runs: the catalog model at the canary's
 * revision, with the number of canary replicas asked for. A canary whose
 * model is gone, external, or can no longer be moved to its revision (its
 * origin was changed since) is passed to `unusable` and left out, so its
 * replicas are withdrawn rather than started from a source that is not the
 * canary's.
 */
export function canaryModels(
  models: readonly CatalogModel[],
  canaries: readonly CanaryRow[],
  unusable: (model: string) => void,
): { model: CatalogModel; revision: string; replicas: number }[] {
  const byName = new Map(models.map((model) => [model.name, model]));
  return canaries.flatMap((canary) => {
    // A promotion or abort asked for is carried out at the start of the next pass; until then the canary still runs.
    if (canary.state !== "running" && canary.state !== "promoting" && canary.state !== "aborting") return [];
    const model = byName.get(canary.model);
    if (!model || model.entry.external) {
      unusable(canary.model);
      return [];
    }
    try {
      return [{ model: resolveModel(entryAtRevision(model.entry, canary.revision), model.source), revision: canary.revision, replicas: canary.replicas }];
    } catch {
      unusable(canary.model);
      return [];
    }
  });
}
