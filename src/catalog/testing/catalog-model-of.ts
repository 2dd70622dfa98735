import { buildCatalog } from "../build-catalog.js";
import type { CatalogModel } from "../catalog-model.js";
import { modelEntrySchema } from "../schema.js";

/** One entry as the catalog builds it (schema, defaults and checks), for tests of what acts on a model. */
export function catalogModelOf(entry: unknown): CatalogModel {
  const model = buildCatalog([{ entry: modelEntrySchema.parse(entry), source: "runtime", place: "test" }]).models[0];
  if (!model) throw new Error("no model built");
  return model;
}
