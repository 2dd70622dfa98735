import { parseDuration, type CatalogModel } from "../catalog/index.js";
import { demandBytesPerCard, demandProfile, type DemandProfile } from "../placement/index.js";
import type { ModelStatusRow } from "../store/index.js";
import type { ReconcilerFacts } from "./reconciler-ports.js";
import type { DesiredModel } from "./types.js";

/** What should run of a model, as the pure diff reads it: the catalog's scaling with the model's stored status. */
/** What the decisions ask of the model's figures; `reading` is absent where no read can be under way (a check of one change). */
type FactsAsked = Pick<ReconcilerFacts, "get"> & Partial<Pick<ReconcilerFacts, "reading">>;

export function desiredModel(model: CatalogModel, status: ModelStatusRow | undefined, facts: FactsAsked | undefined, busyAtMs: number | undefined): DesiredModel {
  return {
    name: model.name,
    modelClass: model.class,
    min: model.scaling.min,
    max: model.scaling.max,
    idleTimeoutMs: parseDuration(model.scaling.idle_timeout) ?? 600_000,
    targetInFlight: model.entry.target?.in_flight,
    profiles: demandProfiles(model, facts),
    factsPending: factsPending(model, facts),
    demandAtMs: status?.demand_at ? Date.parse(status.demand_at) : undefined,
    backoffUntilMs: status?.backoff_until ? Date.parse(status.backoff_until) : undefined,
    restartBeforeMs: status?.restart_before ? Date.parse(status.restart_before) : undefined,
    lastFailureAtMs: status?.last_failure_at ? Date.parse(status.last_failure_at) : undefined,
    restartInPlace: status?.restart_in_place === 1,
    busyAtMs,
    placement: status?.placement_state ? { state: status.placement_state, reason: status.placement_reason } : undefined,
  };
}

/**
 * A model's profiles as placement takes them, in the model's order of
 * preference, with the bytes each card must hold when the model's files have
 * been read (the planner's own arithmetic at the model's context).
 */
/**
 * A profile on cards is priced by its files: placed before the read of them
 * settles, it is placed by card count alone, and a model that needs more than
 * a card holds goes on cards that cannot load it (and reports ready on a
 * simulated node). While a read is under way the model waits for it; a source
 * that cannot be read is placed by count, as before.
 */
function factsPending(model: CatalogModel, facts: FactsAsked | undefined): boolean {
  if (facts?.reading === undefined) return false;
  return model.profiles.some((profile) => profile.gpus > 0 && profile.engine !== "comfyui" && facts.get(profile.source) === undefined && facts.reading?.(profile.source) === true);
}

export function demandProfiles(model: CatalogModel, facts: Pick<ReconcilerFacts, "get"> | undefined): DemandProfile[] {
  return model.profiles.map((profile) => {
    // A ComfyUI profile's source is a repository of many files, not one checkpoint to price: it is not read.
    const read = profile.gpus > 0 && profile.engine !== "comfyui" ? facts?.get(profile.source) : undefined;
    return demandProfile(profile, read ? demandBytesPerCard(read, profile, model.entry.context) : undefined);
  });
}
