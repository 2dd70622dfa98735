import type { EngineLaunchInput } from "../driver.js";

/**
 * The environment every engine gets: the profile's own variables, then
 * CUDA_VISIBLE_DEVICES set to the placement's cards. It is set last so no
 * profile can point an engine at cards the placement did not give it, and it
 * is set (to "") for a CPU replica too, so a CPU engine built with CUDA
 * support does not quietly take card 0 from a GPU replica.
 */
export function launchEnvironment(input: EngineLaunchInput): Record<string, string> {
  return { ...input.extraEnv, CUDA_VISIBLE_DEVICES: input.cards.join(",") };
}
