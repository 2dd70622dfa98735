import { admin, type ApiClient } from "../../client/index.js";
import type { ModelEntry } from "../../catalog/index.js";
import type { AddedModelView } from "../../protocol/index.js";
import { renderTable } from "../output.js";

/** Help text of `--no-source-check`, the same on every command that adds a model. */
export const noSourceCheckHelp =
  "store the model without the server reading its sources first: right when the mirror is not up yet, or when the nodes reach the source by an address the server does not";

/** Help text of `--keep-unplaceable`. */
export const keepUnplaceableHelp =
  "store the model even when no node of this fleet could hold it with every card free (it waits, unplaceable, for a node that can); without it such a model is refused and nothing is stored";

/** POST /api/v1/models, with the source check unless the person turned it off. */
export async function addModel(client: ApiClient, entry: ModelEntry, options: { sourceCheck: boolean; keepUnplaceable?: boolean }): Promise<AddedModelView> {
  return await client.send(admin.addModel(entry, { ...(options.sourceCheck ? {} : { source_check: false }), ...(options.keepUnplaceable === true ? { keep_unplaceable: true } : {}) }));
}

/** What the server read before storing the model, one source a line: "profiles[0].source  hf://…  15.2 GiB (safetensors BF16, 7.62B parameters)". */
export function describeSourcesChecked(added: AddedModelView): string {
  if (added.sources_checked === null) return "Sources not read (--no-source-check): a wrong one shows when a replica fetches it.";
  if (added.sources_checked.length === 0) return "No weights sources to read.";
  const rows = added.sources_checked.map((checked) => [checked.where, checked.source, checked.summary]);
  return `Sources read by the server:\n${renderTable(["WHERE", "SOURCE", "HOLDS"], rows).replace(/^/gm, "  ")}`;
}
