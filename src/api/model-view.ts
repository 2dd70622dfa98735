import { type CatalogModel, redactEntry, redactProfile, type Audience, type ResolvedProfile } from "../catalog/index.js";
import type { FailureStatus, ModelState, ModelView, PlacementStatus, ProfileView, ReplicaCounts } from "../protocol/index.js";

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

/** The replicas the catalog asks for whatever the load: its minimum (none for an external model or one kept at max 0). */
function askedCount(model: CatalogModel): number {
  return model.entry.external || model.scaling.max === 0 ? 0 : model.scaling.min;
}

type ModelFacts = Omit<ModelView, "state" | "replicas" | "placement" | "last_failure">;

/**
 * What a model shows apart from its replicas and the reconciler's word on
 * it, kept per built model and audience: the catalog service hands out the
 * same CatalogModel objects while the catalog's revision stands, so masking
 * 2,000 entries is done once per change rather than on every
 * `GET /api/v1/models`.
 */
const factsOf = new WeakMap<CatalogModel, Map<string, ModelFacts>>();

export interface ModelViewOptions {
  /** Who reads: a read-only token sees no env value at all. */
  readonly audience?: Audience;
  /** What the reconciler knows of the model: why it is not placed, its last failure. */
  readonly status?: ModelStatus | undefined;
}

export function modelView(model: CatalogModel, declaredIn: string, replicas: ReplicaCounts = { ready: 0, desired: 0 }, options: ModelViewOptions = {}): ModelView {
  const audience = options.audience ?? "read";
  let known = factsOf.get(model);
  if (!known) {
    known = new Map();
    factsOf.set(model, known);
  }
  const key = `${audience}\u0000${declaredIn}`;
  let facts = known.get(key);
  if (!facts) {
    facts = modelFacts(model, declaredIn, audience);
    known.set(key, facts);
  }
  // Against what was asked: a count the fleet cannot meet reads 2/3, not 2/2 (the reason is in placement).
  const counted = { ready: replicas.ready, desired: Math.max(replicas.desired, askedCount(model)) };
  return {
    ...facts,
    state: modelState(model, counted),
    replicas: counted,
    placement: model.entry.external ? null : (options.status?.placement ?? null),
    last_failure: options.status?.last_failure ?? null,
  };
}

function modelFacts(model: CatalogModel, declaredIn: string, audience: Audience): ModelFacts {
  // Every field shown comes from the masked entry (or masked profiles), so a secret cannot slip through a field added later.
  const entry = redactEntry(model.entry, audience);
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
    profiles: model.profiles.map((profile) => profileView(redactProfile(profile, audience))),
    external: entry.external
      ? { base_url: entry.external.base_url, api_key_env: entry.external.api_key_env ?? null, model: entry.external.model ?? null }
      : null,
    preset: entry.preset ?? null,
  };
}

function profileView(profile: ResolvedProfile): ProfileView {
  return {
    name: profile.name,
    engine: profile.engine,
    source: profile.source,
    gpu_class: profile.gpu_class ?? null,
    gpus: profile.gpus,
    quantization: profile.quantization ?? null,
    memory_gb: profile.memory_gb ?? null,
    cpu_cores: profile.cpu_cores ?? null,
    slots: profile.slots,
    args: profile.args,
    env: profile.env,
    secret_env: profile.secret_env,
    comfy: profile.comfy ?? null,
  };
}
