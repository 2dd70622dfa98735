import type { CatalogModel } from "../catalog/index.js";
import { demandProfile, type HeldReplica } from "../placement/index.js";

/**
 * A replica as placement counts it: its cards, and the host memory and cores
 * its profile reserves (nothing when the model or profile has left the
 * catalog; its cards still count). One rule for the hand start's node check
 * and the presets' "would it fit now".
 */
export function heldReplica(
  replica: { readonly id: string; readonly model: string; readonly profile: string; readonly node: string; readonly cards: readonly number[] },
  models: ReadonlyMap<string, CatalogModel>,
): HeldReplica {
  const model = models.get(replica.model);
  const profile = model?.profiles.find((candidate) => candidate.name === replica.profile);
  const needs = profile ? demandProfile(profile, undefined) : undefined;
  return {
    id: replica.id,
    model: replica.model,
    profile: replica.profile,
    node: replica.node,
    cards: [...replica.cards],
    memoryBytes: needs?.memoryBytes ?? 0,
    cpuCores: needs?.cpuCores ?? 0,
    modelClass: model?.class ?? "opportunistic",
  };
}
