import { z } from "zod";
import { type ModelEntry, redactUrl } from "../catalog/index.js";
import { checkEntrySources, serverHubSettings } from "../plan/index.js";
import type { SourceCheckedView } from "../protocol/index.js";
import { serverReadOptions, type PlanSettings } from "./routes/plan.js";

/**
 * `?source_check=false`: the caller knows the server cannot read the source
 * now (the mirror is not up yet; the nodes reach it by an address the server
 * does not). Only the two words, so `?source_check=no` is refused rather than
 * read as either.
 */
export const sourceCheckQuery = z.strictObject({
  source_check: z.enum(["true", "false"], { message: "true (the default) or false, to store the model without reading its sources" }).optional(),
  /** true: store a model that fits nowhere in this fleet (no node of its class could hold it even empty), to wait for one that can. */
  keep_unplaceable: z.enum(["true", "false"], { message: "true, to store a model no node of this fleet could hold, or false (the default)" }).optional(),
});

/**
 * Reads every weights source of an entry with the server's own hub settings
 * and mirror before it is stored: a typo in a URL is refused at the prompt,
 * with every failing source named, instead of failing a replica on a node
 * minutes later. Answers what it read, for the person to see the sizes.
 */
export async function checkSourcesAtDoor(entry: ModelEntry, settings: PlanSettings): Promise<SourceCheckedView[]> {
  const checked = await checkEntrySources(entry, { ...serverReadOptions(settings), hubSettings: serverHubSettings });
  return checked.map((source) => ({ where: source.where, source: redactUrl(source.source), bytes: source.bytes ?? null, summary: source.summary }));
}
