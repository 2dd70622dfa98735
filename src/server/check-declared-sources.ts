import type { PlacedEntry } from "../catalog/index.js";
import { isDomainError } from "../errors/light.js";
import { checkSourcesAtDoor, type PlanSettings } from "../api/index.js";

/**
 * Reads the sources of the models declared in server.yaml, after the server
 * listens, and answers one warning per model whose sources do not answer.
 * A warning, not a refusal: a server must start while the hub or the mirror
 * is down (and its nodes may reach a source it cannot), yet a typo in the
 * file should be seen at start, not when a replica fails on a node.
 */
export async function checkDeclaredSources(declared: readonly PlacedEntry[], settings: PlanSettings): Promise<string[]> {
  const outcomes = await Promise.all(
    declared.map(async ({ entry, place }) => {
      try {
        await checkSourcesAtDoor(entry, settings);
        return undefined;
      } catch (error) {
        if (!isDomainError(error)) return `WARNING: ${place}: its sources could not be checked: ${String(error)}`;
        const reasons = error.details.length > 0 ? error.details.map((detail) => `\n  - ${detail.where}: ${detail.message}`).join("") : ` (${error.hint})`;
        return `WARNING: ${place}: ${error.message}${reasons}\nThe server runs anyway; its replicas fail to fetch until the source answers.`;
      }
    }),
  );
  return outcomes.filter((warning) => warning !== undefined);
}
