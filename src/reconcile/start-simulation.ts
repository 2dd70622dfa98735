import { demandCardBytes } from "../placement/index.js";
import type { Observation } from "./observe.js";
import type { ReconcilerFacts } from "./reconciler-ports.js";

/**
 * How long a start on a simulated node waits for its model's files to be
 * read, so the replica gets the planner's figures: the demo's stand-in hub
 * answers in milliseconds; a hub that does not answer costs the pass this once.
 */
const simulatedStartWaitMs = 3000;

/**
 * The weights the planner puts on each card of a replica of this profile
 * (the whole model for a CPU one), once its files were read. Sent with
 * every start: a simulated engine decodes at the card's bandwidth over
 * them, as a real one would; a real engine ignores them.
 */
export async function startSimulation(
  facts: ReconcilerFacts | undefined,
  observation: Pick<Observation, "modelOf" | "simulatedNodes">,
  start: { readonly model: string; readonly profile: string; readonly node: string },
): Promise<{ weights_bytes_per_card: number } | undefined> {
  const model = observation.modelOf.get(start.model);
  const profile = model?.profiles.find((candidate) => candidate.name === start.profile);
  if (!model || !profile || profile.engine === "comfyui" || !facts) return undefined;
  // A simulated replica placed before its files were read would time itself by defaults for its whole life: the read is waited for, briefly.
  const read = observation.simulatedNodes.has(start.node) ? await facts.whenRead(profile.source, simulatedStartWaitMs) : facts.get(profile.source);
  if (!read) return undefined;
  const weights = demandCardBytes(read, profile.gpus > 0 ? profile : { ...profile, gpus: 1 }, model.entry.context)?.weights;
  return weights === undefined ? undefined : { weights_bytes_per_card: Math.round(weights) };
}
