import type { Actor, CatalogModel, ResolvedProfile, ModelEntry } from "../catalog/index.js";
import { flagValue, loadsAdaptersAtRuntime, vllmMaxLoraRank } from "../engines/index.js";
import { DomainError, isDomainError } from "../errors/light.js";
import {
  adapterRefusal,
  readAdapter,
  type AdapterBase,
  type AdapterFacts,
  defaultSourceCheckTimeoutMs,
  readModelSource,
  type ReadModelSourceOptions,
} from "../plan/index.js";
import {
  type AdapterChangeView,
  type AdaptersView,
  type ReplicaSpec,
  type ReplicaView,
  dryRunAnswer,
  type Change,
  type DryRunAnswer,
} from "../protocol/index.js";
import type { Store } from "../store/index.js";
import type { CatalogService } from "./catalog-service.js";
import { recordModelEvent } from "./record-model-event.js";
import { actorText, changeWithSurge, previewWithSurge, type RequestRestart, type SurgePreview } from "./change-with-surge.js";
import { catalogWriteChange } from "./catalog-write-change.js";
import type { FleetService } from "./fleet-service.js";

export interface NewAdapter {
  readonly name: string;
  readonly source: string;
  readonly scale?: number | undefined;
}

type LiveReplica = { readonly view: ReplicaView; readonly spec: ReplicaSpec | null };

/** Whether every live replica's engine is ready and was started so that it takes an adapter while it runs. */
function allLoadAtRuntime(live: readonly LiveReplica[]): boolean {
  return live.every(
    ({ view, spec }) => view.state === "ready" && spec !== null && loadsAdaptersAtRuntime(spec.engine, { adapters: spec.adapters.length, args: spec.args }),
  );
}

/** The largest LoRA rank a profile's engine is started for: --max-lora-rank in its args, else what its driver passes. */
function maxLoraRank(profile: ResolvedProfile): number {
  const given = Number(flagValue(profile.args, "--max-lora-rank"));
  if (Number.isInteger(given) && given > 0) return given;
  // SGLang sizes its buffers from the adapters it starts with; a larger one is then taken by a restart, not refused.
  return profile.engine === "vllm" ? vllmMaxLoraRank : Number.POSITIVE_INFINITY;
}

function adaptersView(model: string, entry: ModelEntry): AdaptersView {
  return { model, adapters: (entry.adapters ?? []).map((adapter) => ({ name: adapter.name, source: adapter.source, scale: adapter.scale ?? null })) };
}

/**
 * A served model's LoRA adapters. An adapter is checked against every
 * profile's engine before it is attached (its files read, as the planner
 * reads a model's); then, where every running engine takes adapters while it
 * runs, it is loaded into each through its agent with no restart, and only
 * then named in the catalog (so the gateway routes its name to engines that
 * have it); otherwise the catalog changes and the replicas are replaced by
 * the reconciler's surge restart, each new one started with the adapter.
 */
export class AdapterService {
  constructor(
    private readonly store: Store,
    private readonly catalog: CatalogService,
    private readonly fleet: Pick<FleetService, "liveReplicasWithSpecs" | "changeAdapterOnReplica">,
    private readonly requestRestart: RequestRestart,
    /** The server's hub settings, read at each use. */
    private readonly hub: () => ReadModelSourceOptions,
    /** For dry runs; without it a dry run that needs a restart is refused. */
    private readonly surgePreview?: SurgePreview,
  ) {}

  /** A mirror that accepts the connection and never answers must fail the command with a reason, not hang it. */
  private hubWithDeadline(): ReadModelSourceOptions {
    return { requestTimeoutMs: defaultSourceCheckTimeoutMs, ...this.hub() };
  }

  async list(name: string): Promise<AdaptersView> {
    return adaptersView(name, (await this.catalog.get(name)).entry);
  }

  add(name: string, adapter: NewAdapter, inPlace: boolean, actor: Actor): Promise<AdapterChangeView>;
  /** With `dryRun`: the same checks (the adapter's files read), and whether it would load at runtime or restart, writing nothing. */
  add(name: string, adapter: NewAdapter, inPlace: boolean, actor: Actor, dryRun: boolean): Promise<AdapterChangeView | DryRunAnswer<AdapterChangeView>>;
  async add(name: string, adapter: NewAdapter, inPlace: boolean, actor: Actor, dryRun = false): Promise<AdapterChangeView | DryRunAnswer<AdapterChangeView>> {
    const model = await this.catalog.get(name);
    const change = `adding adapter ${adapter.name} to it`;
    const withAdapter = (entry: ModelEntry): ModelEntry => ({
      ...entry,
      adapters: [...(entry.adapters ?? []), { name: adapter.name, source: adapter.source, ...(adapter.scale !== undefined ? { scale: adapter.scale } : {}) }],
    });
    this.refuseScale(model, adapter);
    // The catalog's own refusals (a declared model, a name taken, an engine without adapters) before any file is read.
    await this.catalog.tryChange(name, change, withAdapter);
    await this.checkAdapter(model, adapter.source);
    const live = await this.fleet.liveReplicasWithSpecs(name);
    if (dryRun) return this.preview(name, change, withAdapter, "added", adapter.name, inPlace, live);
    if (live.length > 0 && !allLoadAtRuntime(live)) return this.surge(name, "model-adapter-added", change, withAdapter, "added", adapter.name, inPlace, actor);
    const loaded: string[] = [];
    try {
      for (const { view } of live) {
        await this.fleet.changeAdapterOnReplica(view.id, { action: "load", adapter: { name: adapter.name, source: adapter.source } });
        loaded.push(view.id);
      }
      await this.catalog.replaceEntry(name, "model-adapter-added", change, actor, withAdapter);
    } catch (error) {
      // Nothing half-done: engines that took it let it go again, since the catalog does not name it.
      await this.unloadQuietly(loaded, adapter.name);
      throw error;
    }
    // Replicas that started while the adapter was loading were placed from the older entry: they load it too, or are replaced.
    const warnings: string[] = [];
    const latecomers = (await this.fleet.liveReplicasWithSpecs(name)).filter(
      ({ view, spec }) => !loaded.includes(view.id) && !(spec?.adapters ?? []).some((candidate) => candidate.name === adapter.name),
    );
    if (latecomers.length > 0 && allLoadAtRuntime(latecomers)) {
      for (const { view } of latecomers) {
        await this.fleet.changeAdapterOnReplica(view.id, { action: "load", adapter: { name: adapter.name, source: adapter.source } }).then(
          () => loaded.push(view.id),
          (error: unknown) => warnings.push(`${view.id}: ${(error as Error).message}`),
        );
      }
    } else if (latecomers.length > 0) {
      await this.requestRestart(await this.catalog.get(name), inPlace, actorText(actor));
      warnings.push(`${latecomers.length} replica(s) started from the entry without ${adapter.name} are replaced by surge`);
    }
    await recordModelEvent(this.store, name, "model-adapter-added", `${actorText(actor)} adds adapter ${adapter.name} to ${name}${live.length > 0 ? `: loaded into ${loaded.length} running replica(s), no restart` : ""}`);
    return this.answer(name, { change: "added", adapter: adapter.name, applied: live.length > 0 ? "runtime" : "catalog", replicas_changed: loaded, warnings, inPlace });
  }

  remove(name: string, adapterName: string, inPlace: boolean, actor: Actor): Promise<AdapterChangeView>;
  remove(name: string, adapterName: string, inPlace: boolean, actor: Actor, dryRun: boolean): Promise<AdapterChangeView | DryRunAnswer<AdapterChangeView>>;
  async remove(name: string, adapterName: string, inPlace: boolean, actor: Actor, dryRun = false): Promise<AdapterChangeView | DryRunAnswer<AdapterChangeView>> {
    const model = await this.catalog.get(name);
    const known = model.entry.adapters ?? [];
    if (!known.some((adapter) => adapter.name === adapterName)) {
      throw new DomainError(
        "adapter_not_found",
        `model ${name} has no adapter ${adapterName}`,
        known.length > 0 ? `Its adapters: ${known.map((adapter) => adapter.name).join(", ")}.` : `It has none; add one with \`llmgw ctl model adapters ${name} --add NAME=SOURCE\`.`,
      );
    }
    const change = `removing adapter ${adapterName} from it`;
    const withoutAdapter = (entry: ModelEntry): ModelEntry => {
      const { adapters: previous, ...rest } = entry;
      const kept = (previous ?? []).filter((adapter) => adapter.name !== adapterName);
      return kept.length > 0 ? { ...rest, adapters: kept } : rest;
    };
    const live = await this.fleet.liveReplicasWithSpecs(name);
    if (dryRun) return this.preview(name, change, withoutAdapter, "removed", adapterName, inPlace, live);
    if (live.length > 0 && !allLoadAtRuntime(live)) return this.surge(name, "model-adapter-removed", change, withoutAdapter, "removed", adapterName, inPlace, actor);
    // The catalog first: the gateway stops sending the name before any engine forgets it.
    await this.catalog.replaceEntry(name, "model-adapter-removed", change, actor, withoutAdapter);
    const unloaded: string[] = [];
    const warnings: string[] = [];
    for (const { view } of live) {
      await this.fleet.changeAdapterOnReplica(view.id, { action: "unload", name: adapterName }).then(
        () => unloaded.push(view.id),
        (error: unknown) => warnings.push(`${view.id}: ${(error as Error).message}`),
      );
    }
    await recordModelEvent(this.store, name, "model-adapter-removed", `${actorText(actor)} removes adapter ${adapterName} from ${name}${live.length > 0 ? `: unloaded from ${unloaded.length} running replica(s), no restart` : ""}`);
    return this.answer(name, { change: "removed", adapter: adapterName, applied: live.length > 0 ? "runtime" : "catalog", replicas_changed: unloaded, warnings, inPlace });
  }

  private refuseScale(model: CatalogModel, adapter: NewAdapter): void {
    if (adapter.scale === undefined) return;
    const other = model.profiles.find((profile) => profile.engine !== "llamacpp");
    if (other === undefined) return;
    throw new DomainError(
      "adapter_invalid",
      `adapter ${adapter.name}: a scale (@${adapter.scale}) applies to llama.cpp only, but ${model.name}'s profile ${other.name} runs ${other.engine}, which applies an adapter at the strength it was trained with`,
      `Give it without @SCALE (NAME=SOURCE).`,
    );
  }

  /** Reads the adapter's own files and refuses it for any profile whose engine could not attach it. */
  private async checkAdapter(model: CatalogModel, source: string): Promise<void> {
    if (model.profiles.length === 0) {
      throw new DomainError("invalid_profile", `${model.name} is an external model: it runs at its provider, which llmgw gives no adapters`, "Add adapters to models with profiles.");
    }
    const facts: AdapterFacts = await readAdapter(source, this.hubWithDeadline());
    for (const profile of model.profiles) {
      if (profile.engine !== "vllm" && profile.engine !== "sglang" && profile.engine !== "llamacpp") continue; // the catalog refuses these
      const base: AdapterBase = {
        model: model.name,
        engine: profile.engine,
        // Only llama.cpp's check compares architectures; a PEFT adapter names its base model, not its type.
        modelType: profile.engine === "llamacpp" && facts.format === "gguf-lora" ? await this.baseModelType(profile) : "",
        maxLoraRank: maxLoraRank(profile),
      };
      const refusal = adapterRefusal(source, facts, base);
      if (refusal) throw refusal;
    }
  }

  private async baseModelType(profile: ResolvedProfile): Promise<string> {
    return (await readModelSource(profile.source, this.hubWithDeadline())).architecture.modelType;
  }

  private async surge(
    name: string,
    action: "model-adapter-added" | "model-adapter-removed",
    change: string,
    mutate: (entry: ModelEntry) => ModelEntry,
    what: "added" | "removed",
    adapter: string,
    inPlace: boolean,
    actor: Actor,
  ): Promise<AdapterChangeView> {
    const { restart } = await changeWithSurge(this.catalog, this.requestRestart, { name, action, change, actor, inPlace, mutate });
    await recordModelEvent(this.store, name, action, `${actorText(actor)} ${what === "added" ? "adds" : "removes"} adapter ${adapter} ${what === "added" ? "to" : "from"} ${name}: its engines take adapters only at start, so ${restart.replicas} replica(s) restart${inPlace ? " in place" : " by surge"}`);
    const view = adaptersView(name, (await this.catalog.get(name)).entry);
    return { ...view, change: what, adapter, applied: "restart", replicas_changed: [], restart_before: restart.restart_before, in_place: restart.in_place, replicas: restart.replicas, warnings: [] };
  }

  /** A dry run of an adapter change: loaded into (or unloaded from) each running replica, or their restart, as the change would choose. */
  private async preview(
    name: string,
    change: string,
    mutate: (entry: ModelEntry) => ModelEntry,
    what: "added" | "removed",
    adapter: string,
    inPlace: boolean,
    live: Awaited<ReturnType<FleetService["liveReplicasWithSpecs"]>>,
  ): Promise<DryRunAnswer<AdapterChangeView>> {
    if (live.length > 0 && !allLoadAtRuntime(live)) {
      if (!this.surgePreview) throw new DomainError("dry_run_unsupported", "this server was built without the reconciler's dry run; nothing was changed", "Leave out ?dry_run to make the change.");
      const { model, restart, changes } = await previewWithSurge(this.catalog, this.surgePreview, { name, change, inPlace, mutate });
      const view = adaptersView(name, model.entry);
      return dryRunAnswer({ ...view, change: what, adapter, applied: "restart", replicas_changed: [], restart_before: restart.restart_before, in_place: restart.in_place, replicas: restart.replicas, warnings: [] }, changes);
    }
    const preview = await this.catalog.preview(name, change, mutate);
    const verb = what === "added" ? "load" : "unload";
    const changes: Change[] = [
      catalogWriteChange(name, preview.before, preview.after),
      ...live.map(({ view }): Change => ({
        kind: `adapter-${verb}`,
        summary: `${verb} adapter ${adapter} ${what === "added" ? "into" : "from"} replica ${view.id} on ${view.node}, without a restart`,
        model: name,
        replica: view.id,
        node: view.node,
      })),
    ];
    const view = adaptersView(name, preview.after);
    const outcome: AdapterChangeView = { ...view, change: what, adapter, applied: live.length > 0 ? "runtime" : "catalog", replicas_changed: live.map(({ view: replica }) => replica.id), restart_before: null, in_place: inPlace, replicas: 0, warnings: [] };
    return dryRunAnswer(outcome, changes);
  }

  private async answer(
    name: string,
    outcome: { change: "added" | "removed"; adapter: string; applied: "runtime" | "catalog"; replicas_changed: string[]; warnings: string[]; inPlace: boolean },
  ): Promise<AdapterChangeView> {
    const view = adaptersView(name, (await this.catalog.get(name)).entry);
    return { ...view, change: outcome.change, adapter: outcome.adapter, applied: outcome.applied, replicas_changed: outcome.replicas_changed, restart_before: null, in_place: outcome.inPlace, replicas: 0, warnings: outcome.warnings };
  }

  private async unloadQuietly(replicas: readonly string[], adapter: string): Promise<void> {
    for (const id of replicas) {
      await this.fleet.changeAdapterOnReplica(id, { action: "unload", name: adapter }).catch((error: unknown) => {
        if (!isDomainError(error)) throw error;
      });
    }
  }
}
