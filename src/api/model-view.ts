import type { CatalogModel, ResolvedProfile, Scaling } from "../catalog/catalog-model.js";
import type { ModelClass } from "../catalog/schema.js";
import { redactEntry, redactProfile } from "../catalog/redact.js";

export interface ReplicaCounts {
  readonly ready: number;
  readonly desired: number;
}

/** Where the model views get their replica counts; the fleet supplies it once nodes exist. */
export type ReplicaCountSource = () => Promise<ReadonlyMap<string, ReplicaCounts>>;

export const noReplicas: ReplicaCountSource = async () => new Map();

export type ModelState = "external" | "stopped" | "on-demand" | "pending" | "degraded" | "ready";

/**
 * The model object of the admin API and of `ctl ... --json`: a stable
 * interface for tools (documented in the README). It shows what is in force,
 * with every default filled in, and never a secret: an external model's key
 * is named by its environment variable only, and secret-looking env values
 * and URL passwords are masked (./redact.ts).
 */
export interface ModelView {
  name: string;
  source: "file" | "runtime";
  /** For a declared model, the file to edit ("server.yaml"); null for a runtime one. */
  declared_in: string | null;
  origin: string | null;
  context: number | null;
  max_output: number | null;
  class: ModelClass;
  class_set: boolean;
  scaling: Scaling;
  target: { in_flight: number } | null;
  owner: string | null;
  fallbacks: readonly string[];
  aliases: readonly string[];
  adapters: readonly { name: string; source: string; scale?: number | undefined }[];
  profiles: readonly ResolvedProfile[];
  external: { base_url: string; api_key_env: string | null; model: string | null } | null;
  state: ModelState;
  replicas: ReplicaCounts;
}

export function modelState(model: CatalogModel, replicas: ReplicaCounts): ModelState {
  if (model.entry.external) return "external";
  if (model.scaling.max === 0) return "stopped";
  if (replicas.ready === 0) return model.scaling.min === 0 ? "on-demand" : "pending";
  return replicas.ready >= Math.max(model.scaling.min, 1) ? "ready" : "degraded";
}

export function modelView(model: CatalogModel, declaredIn: string, replicas: ReplicaCounts = { ready: 0, desired: 0 }): ModelView {
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
  };
}
