import type { CatalogModel } from "../catalog/catalog-model.js";
import { redactEntry, redactProfile } from "../catalog/redact.js";
import type { FailureStatus, ModelState, ModelView, PlacementStatus, ReplicaCounts } from "../protocol/views.js";

/** Where the model views get their replica counts; the fleet supplies it once nodes exist. */
export type ReplicaCountSource = () => Promise<ReadonlyMap<string, ReplicaCounts>>;

export const noReplicas: ReplicaCountSource = async () => new Map();

/** What the reconciler says of a model: whether it is placed (or why not) and its last failure. */
export interface ModelStatus {
  readonly placement: PlacementStatus | null;
  readonly last_failure: FailureStatus | null;
}

export type ModelStatusSource = () => Promise<ReadonlyMap<string, ModelStatus>>;

export const noModelStatus: ModelStatusSource = async () => new Map();

export function modelState(model: CatalogModel, replicas: ReplicaCounts): ModelState {
  if (model.entry.external) return "external";
  if (model.scaling.max === 0) return "stopped";
  if (replicas.ready === 0) return model.scaling.min === 0 ? "on-demand" : "pending";
  return replicas.ready >= Math.max(model.scaling.min, 1) ? "ready" : "degraded";
}

export function modelView(model: CatalogModel, declaredIn: string, replicas: ReplicaCounts = { ready: 0, desired: 0 }, status?: ModelStatus): ModelView {
  // Every field shown comes from the masked entry (or masked profiles), so a secret cannot slip through a field added later.
  const entry = redactEntry(model.entry);
  return {
    name: model.name,
    source: model.source,
    declared_in: model.source === "file" ? declaredIn : null,
    origin: entry.origin ?? null,
    context: entry.context ?? null,
    max_output: entry.max_output ?? null,
    class: model.class,
    class_set: model.class_set,
    scaling: model.scaling,
    target: entry.target ?? null,
    owner: entry.owner ?? null,
    fallbacks: model.fallbacks,
    aliases: model.aliases,
    adapters: entry.adapters ?? [],
    profiles: model.profiles.map(redactProfile),
    external: entry.external
      ? { base_url: entry.external.base_url, api_key_env: entry.external.api_key_env ?? null, model: entry.external.model ?? null }
      : null,
    state: modelState(model, replicas),
    replicas,
    placement: entry.external ? null : (status?.placement ?? null),
    last_failure: status?.last_failure ?? null,
  };
}
