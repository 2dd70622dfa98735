import { profilePosition, describeActor, type Actor, resolveModel, type CatalogModel, type ResolvedProfile, type ModelEntry } from "../catalog/index.js";
import { isDeepStrictEqual } from "node:util";
import { DomainError, isDomainError, DeclaredInFile } from "../errors/index.js";
import { fleetFromNodes, type Fleet, type InventoryNode } from "../fleet/index.js";
import type { ModelFacts } from "../plan/index.js";
import {
  type ModelChangeSettings,
  type ModelChangeView,
  type StoredFiguresView,
  dryRunAnswer,
  type Change,
  type DryRunAnswer,
  type EventKind,
} from "../protocol/index.js";
import { checkContextChange, checkGpusChange, engineArgumentChanges, type ChangeToPreview } from "../reconcile/index.js";
import type { ModelFactsService } from "./model-facts-service.js";
import { checkedWithStoredFigures, storedFiguresField, storedFiguresNote, storedFiguresView } from "./stored-figures.js";
import type { RestartService } from "./restart-service.js";
import { type Store, insertEvents } from "../store/index.js";
import type { CatalogService } from "./catalog-service.js";
import { catalogWriteChange } from "./catalog-write-change.js";

export interface ModelChangeParts {
  readonly store: Store;
  readonly catalog: CatalogService;
  readonly inventoryNodes: () => Promise<readonly InventoryNode[]>;
  readonly restarts: Pick<RestartService, "request" | "refuseWithoutRoom" | "check">;
  /** What the reconciler's passes would do after a change (a dry run). */
  readonly preview: (change: ChangeToPreview) => Promise<Change[]>;
  /** Reads a source's config and weights headers (the planner's reader), or the figures kept from its last read when its files cannot be read now. */
  readonly facts: Pick<ModelFactsService, "read">;
  readonly gpuMemoryUtilization: number;
}

/** Asked for when the model's files cannot be read: the change goes ahead without the checks that need them. */
const uncheckedFlag = "--unchecked-memory";

export interface ContextRequest {
  readonly tokens: number;
  readonly slots?: number | undefined;
  readonly inPlace?: boolean | undefined;
  /** Go ahead when the model's files cannot be read, unchecked against its trained context and its cards' memory. */
  readonly uncheckedMemory?: boolean | undefined;
}

export interface GpusRequest {
  /** Cards per node. */
  readonly gpus: number;
  /** Nodes per replica, for vLLM and SGLang profiles; unchanged when undefined. */
  readonly nodes?: number | undefined;
  readonly profile?: string | undefined;
  readonly inPlace?: boolean | undefined;
  /** Go ahead when the model's files cannot be read, unchecked against its heads and its cards' memory. */
  readonly uncheckedMemory?: boolean | undefined;
}

function settingsOf(model: CatalogModel): ModelChangeSettings {
  return { context: model.entry.context ?? null, profiles: model.profiles.map((profile) => ({ name: profile.name, engine: profile.engine, gpus: profile.gpus, slots: profile.slots })) };
}

/** ComfyUI has no architecture the planner reads; every other engine's source is checked. */
const needsFacts = (profile: ResolvedProfile) => profile.engine !== "comfyui";

/**
 * Changes a served model's context or its cards per replica, checking first:
 * it reads the model's own files (the planner's facts) and the live fleet,
 * asks the pure checks, refuses a surge with no room beside the running
 * replicas before anything is written, then writes the entry with its audit
 * event, records what changed in the events, and rolls the replicas.
 */
export class ModelChangeService {
  constructor(private readonly parts: ModelChangeParts) {}

  context(name: string, request: ContextRequest, actor: Actor): Promise<ModelChangeView>;
  /** With `dryRun`: the same checks, and what the change would do, writing nothing. */
  context(name: string, request: ContextRequest, actor: Actor, dryRun: boolean): Promise<ModelChangeView | DryRunAnswer<ModelChangeView>>;
  async context(name: string, request: ContextRequest, actor: Actor, dryRun = false): Promise<ModelChangeView | DryRunAnswer<ModelChangeView>> {
    const model = await this.runtimeModel(name, "changing its context");
    const { facts, stored } = await this.readFacts(model, model.profiles.filter(needsFacts), {
      change: `a ${request.tokens}-token context`,
      unchecked: "whether it is within what the model was trained for, and whether its KV cache fits its cards beside the weights",
      allowed: request.uncheckedMemory ?? false,
    });
    const fleet = await this.fleet();
    const check = (current: CatalogModel) =>
      checkedWithStoredFigures(stored, () => checkContextChange({ model: current, tokens: request.tokens, slots: request.slots, facts, fleet, gpuMemoryUtilization: this.parts.gpuMemoryUtilization }));
    const slotsText = request.slots !== undefined ? `, ${request.slots} slots per llama.cpp replica` : "";
    return await this.apply(model, "context", check(model), request.inPlace ?? false, actor, {
      action: "model-context-changed",
      change: "changing its context",
      describe: (before) => `context ${before.entry.context ?? "engine default"} → ${request.tokens} tokens${slotsText}`,
      mutate: (entry) => check(resolveModel(entry, "runtime")),
      inPlaceCommand: `llmgw ctl model context ${name} ${request.tokens}${request.slots !== undefined ? ` --slots ${request.slots}` : ""} --in-place`,
      stored,
    }, dryRun);
  }

  gpus(name: string, request: GpusRequest, actor: Actor): Promise<ModelChangeView>;
  gpus(name: string, request: GpusRequest, actor: Actor, dryRun: boolean): Promise<ModelChangeView | DryRunAnswer<ModelChangeView>>;
  async gpus(name: string, request: GpusRequest, actor: Actor, dryRun = false): Promise<ModelChangeView | DryRunAnswer<ModelChangeView>> {
    const model = await this.runtimeModel(name, "changing its cards");
    const target = model.profiles[profilePosition(model.entry, request.profile, "cards")];
    const read =
      target && needsFacts(target)
        ? await this.readFacts(model, [target], {
            change: `${request.gpus} card${request.gpus === 1 ? "" : "s"} per replica`,
            unchecked: "whether that many cards split the model's attention heads, and whether each card holds its share of the weights and KV cache",
            allowed: request.uncheckedMemory ?? false,
          })
        : undefined;
    const facts = target ? read?.facts.get(target.source) : undefined;
    const stored = read?.stored ?? [];
    const fleet = await this.fleet();
    const check = (current: CatalogModel) =>
      checkedWithStoredFigures(stored, () => checkGpusChange({ model: current, profile: request.profile, gpus: request.gpus, nodes: request.nodes, facts, fleet, gpuMemoryUtilization: this.parts.gpuMemoryUtilization }));
    const { entry, profile } = check(model);
    const beforeProfile = model.profiles.find((candidate) => candidate.name === profile);
    const before = beforeProfile?.gpus;
    const nodesText = request.nodes !== undefined && request.nodes !== beforeProfile?.nodes ? `, ${beforeProfile?.nodes ?? "?"} → ${request.nodes} nodes` : "";
    return await this.apply(model, "gpus", entry, request.inPlace ?? false, actor, {
      action: "model-gpus-changed",
      change: "changing its cards",
      describe: () => `profile ${profile}: ${before ?? "?"} → ${request.gpus} cards ${beforeProfile !== undefined && (beforeProfile.nodes > 1 || request.nodes !== undefined) ? "per node" : "per replica"}${nodesText}`,
      mutate: (current) => check(resolveModel(current, "runtime")).entry,
      inPlaceCommand: `llmgw ctl model gpus ${name} ${request.gpus}${request.profile !== undefined ? ` --profile ${request.profile}` : ""}${request.nodes !== undefined ? ` --nodes ${request.nodes}` : ""} --in-place`,
      stored,
    }, dryRun);
  }

  private async apply(
    model: CatalogModel,
    change: ModelChangeView["change"],
    checked: ModelEntry,
    inPlace: boolean,
    actor: Actor,
    how: { action: EventKind; change: string; describe: (before: CatalogModel) => string; mutate: (entry: ModelEntry) => ModelEntry; inPlaceCommand: string; stored: readonly StoredFiguresView[] },
    dryRun: boolean,
  ): Promise<ModelChangeView | DryRunAnswer<ModelChangeView>> {
    // Compared as in force: `gpus: 1` written out where the default was already 1 changes nothing to restart for.
    if (isDeepStrictEqual(settingsOf(resolveModel(checked, model.source)), settingsOf(model))) {
      const unchanged: ModelChangeView = { model: model.name, change, before: settingsOf(model), after: settingsOf(model), profiles: engineArgumentChanges(model, model, this.parts.gpuMemoryUtilization), replicas: 0, in_place: inPlace, restart_before: null, ...storedFiguresField(how.stored) };
      return dryRun ? dryRunAnswer(unchanged, []) : unchanged;
    }
    // Asked with the model as it will be, before anything is written: a refusal changes nothing.
    if (!inPlace) await this.parts.restarts.refuseWithoutRoom(resolveModel(checked, model.source), how.inPlaceCommand);
    if (dryRun) {
      const preview = await this.parts.catalog.preview(model.name, how.change, how.mutate);
      const replaced = await this.parts.restarts.check(preview.model, inPlace);
      const outcome: ModelChangeView = {
        model: model.name,
        change,
        before: settingsOf(model),
        after: settingsOf(preview.model),
        profiles: engineArgumentChanges(model, preview.model, this.parts.gpuMemoryUtilization),
        replicas: replaced.length,
        in_place: inPlace,
        restart_before: new Date().toISOString(),
        ...storedFiguresField(how.stored),
      };
      const replicas = await this.parts.preview({ models: preview.catalog.models, restart: { model: model.name, inPlace } });
      return dryRunAnswer(outcome, [catalogWriteChange(model.name, preview.before, preview.after), ...replicas]);
    }
    const after = await this.parts.catalog.change(model.name, how.action, how.change, actor, how.mutate);
    const by = describeActor(actor);
    const at = new Date().toISOString();
    await insertEvents(this.parts.store.db, [{ at, kind: how.action, model: model.name, replica: null, node: null, message: `${by} changes ${model.name}: ${how.describe(model)}${storedFiguresNote(how.stored)}` }]);
    const restart = await this.parts.restarts.request(after, inPlace, by);
    return {
      model: model.name,
      change,
      before: settingsOf(model),
      after: settingsOf(after),
      profiles: engineArgumentChanges(model, after, this.parts.gpuMemoryUtilization),
      replicas: restart.replicas,
      in_place: restart.in_place,
      restart_before: restart.restart_before,
      ...storedFiguresField(how.stored),
    };
  }

  private async runtimeModel(name: string, change: string): Promise<CatalogModel> {
    const model = await this.parts.catalog.get(name);
    // Refused before the model's files are read: the file would undo the change at the next start.
    if (model.source === "file") throw new DeclaredInFile(name, change, this.parts.catalog.declaredIn);
    return model;
  }

  private async fleet(): Promise<Fleet> {
    return fleetFromNodes(await this.parts.inventoryNodes());
  }

  /**
   * The planner's facts of each profile's source, read now: the change is
   * checked against the model's own files, or, when they cannot be read now,
   * against the figures kept from their last read (`stored` says which). A
   * source no one ever read (a model added with --no-source-check whose
   * files the server never reached) is refused with what cannot be checked,
   * unless the person named that risk with --unchecked-memory: its profile
   * is then left out of the facts, and the pure checks skip a profile they
   * have no facts for.
   */
  private async readFacts(
    model: CatalogModel,
    profiles: readonly ResolvedProfile[],
    asked: { readonly change: string; readonly unchecked: string; readonly allowed: boolean },
  ): Promise<{ facts: Map<string, ModelFacts>; stored: StoredFiguresView[] }> {
    const facts = new Map<string, ModelFacts>();
    const stored: StoredFiguresView[] = [];
    for (const profile of profiles) {
      if (facts.has(profile.source)) continue;
      try {
        const read = await this.parts.facts.read(profile.source);
        facts.set(profile.source, read.facts);
        if (read.stored) stored.push(storedFiguresView(profile.source, read.stored.readAt, read.stored.unreadable));
      } catch (error) {
        if (asked.allowed) continue;
        const reason = isDomainError(error) ? error.message : (error as Error).message;
        throw new DomainError(
          "change_unchecked",
          `cannot check ${asked.change} for ${model.name}/${profile.name}: its files cannot be read (${reason}), so llmgw cannot tell ${asked.unchecked}; nothing was changed`,
          `Make ${profile.source} readable by the server (\`llmgw ctl model plan ${profile.source}\` shows what it reads), or pass ${uncheckedFlag} to change it unchecked: if the engine cannot hold it, its replicas fail to start on their nodes and the old ones keep serving until you change it back.`,
        );
      }
    }
    return { facts, stored };
  }
}
