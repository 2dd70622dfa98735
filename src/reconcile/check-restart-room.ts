import type { CatalogModel } from "../catalog/index.js";
import { DomainError } from "../errors/light.js";
import { desiredModel } from "./desired-model.js";
import { fleetSnapshot } from "./fleet-snapshot.js";
import { replacedByRestart, type Observation } from "./observe.js";
import { placeReplicas } from "./placement-functions.js";
import { profilesForReplacement } from "./profile-rank.js";
import type { ReconcilerFacts } from "./reconciler-ports.js";

/**
 * Refuses (no_room) when one replica of `model` as given could not be
 * placed beside the replicas a restart of it replaces, in the fleet as
 * observed, naming `inPlaceCommand` as the way out. Pure: a change that
 * restarts by surge asks it with the model as it will be, before writing
 * anything, so a refusal leaves the catalog as it was.
 */
export function checkRestartRoom(observation: Observation, model: CatalogModel, facts: Pick<ReconcilerFacts, "get"> | undefined, inPlaceCommand: string): void {
  const replaced = observation.observed.replicas.filter((replica) => replacedByRestart(replica, model.name));
  if (replaced.length === 0) return;
  const snapshot = fleetSnapshot(observation.observed, (name) => observation.modelOf.get(name)?.class ?? "opportunistic");
  // The replacement goes on the replaced replica's profile (or a better one), never a worse one: the diff holds a restart to that too.
  const profiles = profilesForReplacement({ ...desiredModel(model, undefined, facts, undefined) }, replaced);
  const result = placeReplicas(snapshot, [{ model: model.name, modelClass: model.class, count: 1, profiles }]);
  if (result.placements.length === 0) {
    const profile = profiles[profiles.length - 1]?.name ?? "any";
    throw new DomainError(
      "no_room",
      `no room to start a replica of ${model.name} on its profile ${profile} beside the ones it replaces: ${result.refusals[0]?.reason ?? "no node fits"}`,
      `Run \`${inPlaceCommand}\` to stop each replica before its replacement starts on the same profile (it serves from one replica fewer meanwhile), or free what profile ${profile} needs (\`llmgw ctl replicas\` shows what holds the cards) first. A change never moves a replica to a worse profile to make room.`,
    );
  }
}
