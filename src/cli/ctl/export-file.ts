import { parseWithSchema, parseYamlSource } from "../../catalog/index.js";
import { catalogExportSchema, type CatalogExport } from "../../protocol/index.js";

/** Reads an export file, refusing bad YAML or a bad value with its file, line and column, and the fix. */
export function parseExportFile(text: string, fileName: string): CatalogExport {
  const source = parseYamlSource(text, fileName);
  return parseWithSchema(catalogExportSchema, source.value, { label: fileName, locate: source.locate });
}
