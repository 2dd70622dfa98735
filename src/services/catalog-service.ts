import type { Kysely } from "kysely";
import { buildCatalog, type Catalog, type PlacedEntry } from "../catalog/build-catalog.js";
import type { CatalogModel } from "../catalog/catalog-model.js";
import type { Actor } from "../catalog/actor.js";
import type { ModelClass, ModelEntry } from "../catalog/schema.js";
import { DomainError } from "../errors/domain-error.js";
import { profilePosition } from "../catalog/profile-position.js";
import { DeclaredInFile, ModelNotFound } from "../errors/model-errors.js";
import { insertAuditEvent } from "../store/audit-rows.js";
import { deleteModelEntry, insertModelEntry, listModelEntries, readCatalogRevision, replaceModelEntry } from "../store/model-rows.js";
import type { Store } from "../store/open-store.js";
import type { Database } from "../store/schema.js";

export type { Actor };

export interface ScaleChange {
  readonly min?: number | undefined;
  readonly max?: number | undefined;
  readonly idle_timeout?: string | undefined;
}

export interface ResourcesChange {
  readonly profile?: string | undefined;
  readonly memory_gb: number;
  readonly cpu_cores?: number | undefined;
}

/** A would-be catalog: the one a change would produce, and its model's entry before and after. */
export interface CatalogPreview {
  readonly catalog: Catalog;
  readonly model: CatalogModel;
  readonly before: ModelEntry | null;
  readonly after: ModelEntry;
}

/** One change to a runtime model's entry: its audit action, the words that complete a refusal, and the entry it makes. */
export interface CatalogEdit {
  readonly action: string;
  /** Completes "refused: declared in server.yaml, …": "scaling it". */
  readonly change: string;
  readonly mutate: (entry: ModelEntry) => ModelEntry;
}

/** The catalog's own edits, shared by the change and its dry run so both build the same entry. */
export const catalogEdits = {
  scale: (change: ScaleChange): CatalogEdit => ({
    action: "model-scaled",
    change: "scaling it",
    mutate: (entry) => {
      const previous = entry.scaling ?? {};
      const min = change.min ?? previous.min;
      let max = change.max ?? previous.max;
      // A new min above the old max lifts the ceiling with it, rather than
      // refusing a plain `scale --min 3`; the output shows the max in force.
      if (change.max === undefined && max !== undefined && min !== undefined && max < min) max = undefined;
      const idleTimeout = change.idle_timeout ?? previous.idle_timeout;
      return {
        ...entry,
        scaling: { ...(min !== undefined ? { min } : {}), ...(max !== undefined ? { max } : {}), ...(idleTimeout !== undefined ? { idle_timeout: idleTimeout } : {}) },
      };
    },
  }),
  resources: (change: ResourcesChange): CatalogEdit => ({
    action: "model-resources-changed",
    change: "changing its resources",
    mutate: (entry) => {
      const profiles = entry.profiles ?? [];
      const index = profilePosition(entry, change.profile, "resources");
      return {
        ...entry,
        profiles: profiles.map((profile, position) =>
          position === index ? { ...profile, memory_gb: change.memory_gb, ...(change.cpu_cores !== undefined ? { cpu_cores: change.cpu_cores } : {}) } : profile,
        ),
      };
    },
  }),
  setClass: (modelClass: ModelClass | "default"): CatalogEdit => ({
    action: "model-class-changed",
    change: "changing its class",
    mutate: (entry) => {
      const { class: _previous, ...rest } = entry;
      return modelClass === "default" ? rest : { ...rest, class: modelClass };
    },
  }),
  setOwner: (owner: string): CatalogEdit => ({ action: "model-owner-changed", change: "changing its owner", mutate: (entry) => ({ ...entry, owner }) }),
  setFallbacks: (fallbacks: readonly string[]): CatalogEdit => ({
    action: "model-fallbacks-changed",
    change: "changing its fallbacks",
    mutate: (entry) => {
      const { fallbacks: _previous, ...rest } = entry;
      return fallbacks.length === 0 ? rest : { ...rest, fallbacks: [...fallbacks] };
    },
  }),
  setTarget: (inFlight: number | null): CatalogEdit => ({
    action: "model-target-changed",
    change: "changing its target",
    mutate: (entry) => {
      const { target: _previous, ...rest } = entry;
      return inFlight === null ? rest : { ...rest, target: { in_flight: inFlight } };
    },
  }),
};

const runtimePlace = (name: string) => `runtime model ${name}`;

/** The catalog in force, built and validated once per revision, with its models by name. */
export interface CatalogSnapshot {
  readonly revision: number;
  readonly catalog: Catalog;
  readonly byName: ReadonlyMap<string, CatalogModel>;
}

/**
 * Reads and changes the catalog: declared models (from server.yaml, fixed for
 * the life of the process) plus runtime models (in the store). Every change
 * builds and validates the catalog it would produce inside the catalog lock,
 * then writes the entry and its audit event in the same transaction, so a
 * refused change or a crash leaves nothing half-written.
 */
export class CatalogService {
  constructor(
    private readonly store: Store,
    private readonly declared: readonly PlacedEntry[],
    /** The declared models' file, as the operator named it ("server.yaml", "prod.yaml"). */
    readonly declaredIn: string,
  ) {}

  private cached: CatalogSnapshot | undefined;

  /** Checks that stored runtime models still agree with server.yaml; called once at start. */
  async verify(): Promise<Catalog> {
    return (await this.snapshot()).catalog;
  }

  /**
   * The catalog in force and its revision. Building and validating 2,000
   * models took most of a `GET /api/v1/models`; the built catalog is kept
   * and rebuilt only when the revision changes (any server's change raises
   * it, so servers sharing Postgres see each other's changes). The revision
   * is read before the entries: a change landing in between leaves newer
   * entries under an older revision, which the next read rebuilds, never the
   * reverse. Shared by the API, and by whatever else reads the catalog.
   */
  async snapshot(): Promise<CatalogSnapshot> {
    const revision = await readCatalogRevision(this.store.db);
    if (this.cached?.revision === revision) return this.cached;
    const catalog = await this.current(this.store.db);
    const snapshot: CatalogSnapshot = { revision, catalog, byName: new Map(catalog.models.map((model) => [model.name, model])) };
    this.cached = snapshot;
    return snapshot;
  }

  async list(): Promise<CatalogModel[]> {
    return [...(await this.snapshot()).catalog.models];
  }

  async get(name: string): Promise<CatalogModel> {
    const snapshot = await this.snapshot();
    const model = snapshot.byName.get(name);
    if (!model) throw new ModelNotFound(name, snapshot.byName.keys());
    return model;
  }

  async add(entry: ModelEntry, actor: Actor): Promise<CatalogModel> {
    return this.store.withCatalogLock(async (transaction) => {
      const runtime = await listModelEntries(transaction);
      const catalog = this.build([...runtime, entry]);
      const at = new Date().toISOString();
      await insertModelEntry(transaction, entry, at);
      await insertAuditEvent(transaction, { at, actor: actor.token, actor_user: actor.user, action: "model-added", model: entry.name, before: null, after: entry });
      return catalog.models.find((model) => model.name === entry.name) as CatalogModel;
    });
  }

  async remove(name: string, actor: Actor): Promise<void> {
    await this.store.withCatalogLock(async (transaction) => {
      const runtime = await listModelEntries(transaction);
      const { rest, entry } = this.checkRemove(runtime, name);
      this.build(rest);
      const at = new Date().toISOString();
      await deleteModelEntry(transaction, name);
      await insertAuditEvent(transaction, { at, actor: actor.token, actor_user: actor.user, action: "model-removed", model: name, before: entry, after: null });
    });
  }

  scale(name: string, change: ScaleChange, actor: Actor): Promise<CatalogModel> {
    return this.apply(name, catalogEdits.scale(change), actor);
  }

  resources(name: string, change: ResourcesChange, actor: Actor): Promise<CatalogModel> {
    return this.apply(name, catalogEdits.resources(change), actor);
  }

  setClass(name: string, modelClass: ModelClass | "default", actor: Actor): Promise<CatalogModel> {
    return this.apply(name, catalogEdits.setClass(modelClass), actor);
  }

  setOwner(name: string, owner: string, actor: Actor): Promise<CatalogModel> {
    return this.apply(name, catalogEdits.setOwner(owner), actor);
  }

  setFallbacks(name: string, fallbacks: readonly string[], actor: Actor): Promise<CatalogModel> {
    return this.apply(name, catalogEdits.setFallbacks(fallbacks), actor);
  }

  /** Makes one of `catalogEdits` to a runtime model, audited. */
  apply(name: string, edit: CatalogEdit, actor: Actor): Promise<CatalogModel> {
    return this.update(name, edit.action, edit.change, actor, edit.mutate);
  }

  /**
   * Replaces a runtime model's entry with what `mutate` makes of the entry in
   * force, under the catalog lock, with its audit event (before and after).
   * For changes whose checks live outside the catalog (context and cards,
   * checked against the planner's facts and the fleet): `mutate` runs them
   * again on the entry it is given, so a change made meanwhile is checked too.
   */
  change(name: string, action: string, change: string, actor: Actor, mutate: (entry: ModelEntry) => ModelEntry): Promise<CatalogModel> {
    return this.update(name, action, change, actor, mutate);
  }

  private async update(name: string, action: string, change: string, actor: Actor, mutate: (entry: ModelEntry) => ModelEntry): Promise<CatalogModel> {
    return (await this.replaceEntry(name, action, change, actor, mutate)).model;
  }

  /**
   * Replaces a runtime model's entry with what `mutate` makes of it, after
   * building the catalog it would produce, with its audit event and whatever
   * `alongside` writes (a version history row) in the same transaction.
   * `change` completes "refused: declared in server.yaml, …".
   */
  async replaceEntry(
    name: string,
    action: string,
    change: string,
    actor: Actor,
    mutate: (entry: ModelEntry) => ModelEntry,
    alongside?: (transaction: Kysely<Database>, before: ModelEntry, after: ModelEntry, at: string) => Promise<void>,
  ): Promise<{ model: CatalogModel; before: ModelEntry; after: ModelEntry }> {
    return this.store.withCatalogLock(async (transaction) => {
      const runtime = await listModelEntries(transaction);
      const before = this.findRuntime(runtime, name, change);
      const after = mutate(before);
      const catalog = this.build(runtime.map((entry) => (entry.name === name ? after : entry)));
      const at = new Date().toISOString();
      await replaceModelEntry(transaction, after, at);
      await insertAuditEvent(transaction, { at, actor: actor.token, actor_user: actor.user, action, model: name, before, after });
      await alongside?.(transaction, before, after, at);
      return { model: catalog.models.find((model) => model.name === name) as CatalogModel, before, after };
    });
  }

  /** Builds the catalog a change to a runtime model would produce, writing nothing: a refusal before any side effect. */
  async tryChange(name: string, change: string, mutate: (entry: ModelEntry) => ModelEntry): Promise<CatalogModel> {
    return (await this.preview(name, change, mutate)).model;
  }

  /**
   * The catalog a change to a runtime model would produce, refused as the
   * change would be, with the entry before and after: a dry run's would-be
   * state. No lock is taken (its UPDATE raises the revision) and nothing is written.
   */
  async preview(name: string, change: string, mutate: (entry: ModelEntry) => ModelEntry): Promise<CatalogPreview> {
    const runtime = await listModelEntries(this.store.db);
    const before = this.findRuntime(runtime, name, change);
    const after = mutate(before);
    const catalog = this.build(runtime.map((entry) => (entry.name === name ? after : entry)));
    return { catalog, model: catalog.models.find((model) => model.name === name) as CatalogModel, before, after };
  }

  /** What `add` would produce, refused as it would be, writing nothing. */
  async previewAdd(entry: ModelEntry): Promise<CatalogPreview> {
    const catalog = this.build([...(await listModelEntries(this.store.db)), entry]);
    return { catalog, model: catalog.models.find((model) => model.name === entry.name) as CatalogModel, before: null, after: entry };
  }

  /** What `remove` would leave, refused as it would be, writing nothing. */
  async previewRemove(name: string): Promise<{ catalog: Catalog; before: ModelEntry }> {
    const runtime = await listModelEntries(this.store.db);
    const { rest, entry } = this.checkRemove(runtime, name);
    return { catalog: this.build(rest), before: entry };
  }

  private checkRemove(runtime: readonly ModelEntry[], name: string): { rest: ModelEntry[]; entry: ModelEntry } {
    const entry = this.findRuntime(runtime, name, "removing it");
    const rest = runtime.filter((candidate) => candidate.name !== name);
    const dependants = [...this.declared.map((placed) => placed.entry), ...rest].filter((other) => other.fallbacks?.includes(name));
    if (dependants.length > 0) {
      const names = dependants.map((other) => other.name).join(", ");
      throw new DomainError(
        "model_in_use",
        `model "${name}" is a fallback of ${names}; removing it would leave ${dependants.length > 1 ? "them" : "it"} falling back to nothing`,
        `Change the fallbacks first (\`llmgw ctl model fallbacks ${dependants[0]?.name} ...\`), then remove "${name}"; nothing was changed.`,
      );
    }
    return { rest, entry };
  }

  private findRuntime(runtime: readonly ModelEntry[], name: string, change: string): ModelEntry {
    if (this.declared.some((placed) => placed.entry.name === name)) throw new DeclaredInFile(name, change, this.declaredIn);
    const entry = runtime.find((candidate) => candidate.name === name);
    if (!entry) throw new ModelNotFound(name, [...runtime, ...this.declared.map((placed) => placed.entry)].map((candidate) => candidate.name));
    return entry;
  }


  /** Whether server.yaml declares this name: an import must not shadow a declared model. */
  isDeclared(name: string): boolean {
    return this.declared.some((placed) => placed.entry.name === name);
  }

  /** The catalog these runtime entries would make beside the declared ones, refused as any change would be. */
  buildWith(runtime: readonly ModelEntry[]): Catalog {
    return this.build(runtime);
  }

  private async current(db: Kysely<Database>): Promise<Catalog> {
    return this.build(await listModelEntries(db));
  }

  private build(runtime: readonly ModelEntry[]): Catalog {
    return buildCatalog([...this.declared, ...runtime.map((entry): PlacedEntry => ({ entry, source: "runtime", place: runtimePlace(entry.name) }))]);
  }
}
