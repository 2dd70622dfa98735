import { parseWithSchema } from "./schema-errors.js";
import { modelEntrySchema, type ModelEntry } from "./schema.js";
import { parseYamlSource } from "./yaml-source.js";

/**
 * Reads the file given to `ctl model add -f`: one model entry, in the same
 * YAML as a server.yaml entry. A file copied whole from server.yaml (with
 * `models:` and one entry under it) is accepted too, since moving an entry
 * between the two by copy and paste is the point of sharing the format.
 */
export function parseModelFile(text: string, fileName: string): ModelEntry {
  const source = parseYamlSource(text, fileName);
  const value = source.value;
  if (isWrappedSingleEntry(value)) {
    return parseWithSchema(modelEntrySchema, value.models[0], { label: fileName, pathPrefix: ["models", 0], locate: source.locate });
  }
  return parseWithSchema(modelEntrySchema, value, { label: fileName, locate: source.locate });
}

function isWrappedSingleEntry(value: unknown): value is { models: [unknown] } {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const keys = Object.keys(value);
  const models = (value as { models?: unknown }).models;
  return keys.length === 1 && keys[0] === "models" && Array.isArray(models) && models.length === 1;
}
