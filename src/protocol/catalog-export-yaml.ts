import { Document } from "yaml";
import type { CatalogExport } from "./catalog-export.js";

const exportHeader = [
  " The runtime state of an llmgw server, for `llmgw ctl import` on another (or the same) server.",
  " models: the models added at runtime (ctl model add), in server.yaml's entry shape, with the revisions",
  "   each moved through (versions). Models declared in a server.yaml are not here: that file is their record.",
  " keys and tokens: names and limits only, never a secret. An import makes each a new secret and shows it once;",
  "   clients of a key need the new one. Names equal on both sides with equal settings are left as they are.",
].join("\n");

/**
 * The export as YAML with its header: stable for equal state, so two exports
 * can be compared as text. One function for `ctl export` and the console's
 * download, so a file from either imports the same way.
 */
export function renderExport(document: CatalogExport): string {
  const yaml = new Document(document);
  yaml.commentBefore = exportHeader;
  return yaml.toString({ lineWidth: 0 });
}
