import type { CatalogModel, ResolvedProfile } from "../catalog/index.js";
import type { Fleet } from "../fleet/index.js";
import type { ModelFacts } from "../plan/index.js";
import { cardShortfall, profileCardGroups } from "./card-shortfall.js";

/**
 * Why one profile could not run on any node of this fleet even with every
 * card free, in the planner's figures; undefined when some node could hold
 * it, or when that cannot be told: no node of its class has joined yet (a
 * catalog is written before its agents join), its files were not read, or
 * it runs on the CPU or under ComfyUI, which the planner does not price.
 */
function profileFitsNowhere(profile: ResolvedProfile, context: number | undefined, facts: ModelFacts | undefined, fleet: Fleet, gpuMemoryUtilization: number): string | undefined {
  if (profile.gpus <= 0 || profile.engine === "comfyui") return undefined;
  const groups = profileCardGroups(fleet, profile.gpu_class);
  if (groups.length === 0) return undefined;
  const widest = groups.reduce((best, group) => (group.cards > best.cards ? group : best));
  if (widest.cards < profile.gpus) {
    return `profile ${profile.name}: no node has ${profile.gpus} ${profile.gpu_class ?? "GPU"} cards on one fabric; the most, on ${widest.node}, is ${widest.cards}`;
  }
  if (profile.nodes > 1) {
    // A gang's members are nodes of one class on one fabric: count them per pool, never across two.
    const perPool = new Map<string, number>();
    for (const group of groups) {
      if (group.cards >= profile.gpus) perPool.set(`${group.cardClass} on ${group.fabric}`, (perPool.get(`${group.cardClass} on ${group.fabric}`) ?? 0) + 1);
    }
    const [pool, most] = [...perPool].reduce<[string, number]>((best, entry) => (entry[1] > best[1] ? entry : best), ["", 0]);
    if (most < profile.nodes) {
      return `profile ${profile.name}: spans ${profile.nodes} nodes of ${profile.gpus} ${profile.gpu_class ?? "GPU"} cards on one fabric; the most this fleet has is ${most}${pool === "" ? "" : ` (${pool})`}`;
    }
  }
  return facts ? cardShortfall(facts, profile, context, fleet, gpuMemoryUtilization) : undefined;
}

/**
 * Why a model fits nowhere in this fleet: every profile is too large for
 * every node of its class even when empty. Undefined when any profile might
 * fit (now, or once cards are free): that is "no room now", for the
 * reconciler to wait out, not a reason to refuse the model.
 */
export function fitsNowhere(model: CatalogModel, factsOf: ReadonlyMap<string, ModelFacts>, fleet: Fleet, gpuMemoryUtilization: number): string | undefined {
  // Kept at max 0 it is never placed anyway: a catalog entry kept for later is not refused for the fleet of now.
  if (model.entry.external || model.profiles.length === 0 || model.scaling.max === 0) return undefined;
  const reasons: string[] = [];
  for (const profile of model.profiles) {
    const reason = profileFitsNowhere(profile, model.entry.context, factsOf.get(profile.source), fleet, gpuMemoryUtilization);
    if (reason === undefined) return undefined;
    reasons.push(reason);
  }
  return reasons.join("; ");
}
