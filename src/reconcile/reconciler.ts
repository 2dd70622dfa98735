import { randomUUID } from "node:crypto";
import { parseDuration } from "../catalog/duration.js";
import type { CatalogModel } from "../catalog/catalog-model.js";
import type { ReconcileSettings } from "../catalog/reconcile-settings.js";
import type { NodeView, ReplicaViewState } from "../protocol/views.js";
import { listReplicas } from "../store/fleet-rows.js";
import type { Store } from "../store/open-store.js";
import {
  deleteReplicaIntent,
  emptyModelStatus,
  holdLease,
  insertEvents,
  listModelStatus,
  listReplicaIntents,
  releaseLease,
  setNodeControl,
  trimEvents,
  updateModelStatus,
  withdrawReplicaIntent,
  type ModelStatusRow,
  type NewEvent,
} from "../store/reconcile-rows.js";
import { backoffMs } from "./backoff.js";
import { diff } from "./diff.js";
import { fleetSnapshot } from "./fleet-snapshot.js";
import { placeReplicas } from "./placement-functions.js";
import { DomainError } from "../errors/domain-error.js";
import { demandBytesPerCard, demandProfile, type DemandProfile } from "../placement/index.js";
import { ModelFactsCache, type ModelFactsReader } from "./model-facts-cache.js";
import { listCanaries } from "../store/canary-rows.js";
import { canaryModels } from "./canary-models.js";
import type { Action, DesiredModel, Observed, ObservedNode, ObservedReplica } from "./types.js";

/** What the reconciler needs of the fleet: the views, and starts and stops through the agents. */
export interface ReconcilerFleet {
  listNodes(): Promise<NodeView[]>;
  startPlaced(placement: { model: string; profile: string; node: string; cards: readonly number[]; canary?: { readonly revision: string } }): Promise<string>;
  resumeStart(id: string): Promise<void>;
  stopReplica(id: string, drain: boolean): Promise<unknown>;
}

export interface ReconcilerCatalog {
  list(): Promise<CatalogModel[]>;
}

export interface ReconcilerLog {
  info(facts: Record<string, unknown>, message: string): void;
  warn(facts: Record<string, unknown>, message: string): void;
}

/** The shortest time between two passes woken by changes. */
const wakeSpacingMs = 250;

/**
 * The loop that keeps the catalog served, like a controller-runtime
 * reconciler: on every change (`wake`) and every interval, it reads what
 * should run and what runs, asks the pure `diff` for the actions, and carries
 * them out, writing each intent before its side effect. It acts only while it
 * holds the lease, so with several servers on one Postgres one reconciles and
 * the others take over when it stops renewing.
 */
export class Reconciler {
  readonly holder = `${process.pid}-${randomUUID().slice(0, 8)}`;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private leader = false;
  /** The states last seen, to tell replica-ready once; empty after a takeover (nothing is re-announced on the first pass). */
  private lastStates: Map<string, ReplicaViewState> | undefined;
  private readonly busyAt = new Map<string, number>();
  private readonly starting = new Set<string>();
  private lastPassAt = 0;
  /** Runs first in every pass this server leads (the canary gate), so what it decides is acted on in the same pass. */
  private passHook: ((nowMs: number) => Promise<void>) | undefined;

  constructor(
    private readonly store: Store,
    private readonly catalog: ReconcilerCatalog,
    private readonly fleet: ReconcilerFleet,
    private readonly settings: ReconcileSettings,
    private readonly log: ReconcilerLog,
    private readonly now: () => number = Date.now,
    readFacts?: ModelFactsReader,
  ) {
    this.facts = readFacts ? new ModelFactsCache(readFacts, () => this.wake()) : undefined;
  }

  private readonly facts: ModelFactsCache | undefined;

  /** A model's profiles as placement takes them, with each card's bytes once its files were read: for callers that ask placement's filters outside a pass. */
  demandProfilesOf(model: CatalogModel): DemandProfile[] {
    return demandProfiles(model, this.facts);
  }

  get isLeader(): boolean {
    return this.leader;
  }

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
    if (this.leader) await releaseLease(this.store.db, this.holder).catch(() => undefined);
    this.leader = false;
  }

  onPass(hook: (nowMs: number) => Promise<void>): void {
    this.passHook = hook;
  }

  /** Something changed (a catalog change, a heartbeat): look again soon. The pass reads everything anew; the wake-up carries nothing. */
  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    // Wake-ups come with every heartbeat (hundreds a second on a large fleet): they are
    // coalesced into at most one pass per spacing, since each pass reads everything anew anyway.
    this.schedule(Math.max(50, this.lastPassAt + wakeSpacingMs - this.now()));
  }

  private schedule(delayMs: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.pass(), delayMs);
  }

  /** One pass; answers when it is done (tests call it directly). */
  async pass(): Promise<void> {
    if (this.running) {
      this.again = true;
      return await this.running;
    }
    this.running = this.passOnce()
      .catch((error: unknown) => this.log.warn({ error: (error as Error).message }, "reconcile-pass-failed"))
      .finally(() => {
        this.running = undefined;
        if (this.stopped) return;
        const soon = this.again;
        this.again = false;
        this.schedule(soon ? wakeSpacingMs : Math.min(this.settings.intervalMs, this.settings.leaseMs / 3));
      });
    return await this.running;
  }

  /** Reads what should run and what runs, in one go, as the pure functions take it. */
  private async observe(nowMs: number) {
    const [models, statuses, nodes, rows, intents, canaries] = await Promise.all([
      this.catalog.list(),
      listModelStatus(this.store.db),
      this.fleet.listNodes(),
      listReplicas(this.store.db),
      listReplicaIntents(this.store.db),
      listCanaries(this.store.db),
    ]);
    const intentOf = new Map(intents.map((intent) => [intent.id, intent]));
    const nodeOf = new Map(nodes.map((node) => [node.name, node]));
    const modelOf = new Map(models.map((model) => [model.name, model]));
    const observed: Observed = {
      nowMs,
      nodes: nodes.map(
        (node): ObservedNode => ({
          name: node.name,
          state: node.state,
          cordoned: node.cordoned,
          draining: node.draining,
          schedulable: node.state === "ready" && !node.cordoned,
          engines: node.engines as ObservedNode["engines"],
          cards: node.gpus.map((gpu) => ({ index: gpu.index, gpuClass: gpu.class, memoryBytes: gpu.memory_bytes, fabric: gpu.fabric })),
          memoryBytes: node.memory_bytes,
          cpuCores: node.cpu_cores,
        }),
      ),
      replicas: rows.map((row): ObservedReplica => {
        const status = row.status;
        const intent = intentOf.get(row.id);
        const nodeState = nodeOf.get(row.node)?.state;
        const terminal = row.state === "failed" || row.state === "stopped";
        const profile = modelOf.get(row.model)?.profiles.find((candidate) => candidate.name === row.profile);
        return {
          id: row.id,
          model: row.model,
          profile: row.profile,
          node: row.node,
          cards: row.cards,
          state: nodeState === "lost" && !terminal ? "lost" : row.pending ? "pending" : row.state,
          managed: intent?.managed === 1,
          placedAtMs: Date.parse(intent?.placed_at ?? row.created_at),
          withdrawnAtMs: intent?.withdrawn_at ? Date.parse(intent.withdrawn_at) : undefined,
          inFlight: status?.load ? status.load.running + status.load.waiting : undefined,
          reason: status?.reason ?? null,
          memoryBytes: profile ? demandProfile(profile, undefined).memoryBytes : 0,
          cpuCores: profile?.cpu_cores ?? 0,
          ...(intent?.arm === "canary" ? { arm: "canary" as const } : {}),
        };
      }),
    };

    return { models, statuses, rows, intents, observed, canaries };
  }

  private async passOnce(): Promise<void> {
    const nowMs = this.now();
    this.lastPassAt = nowMs;
    const held = await holdLease(this.store.db, this.holder, new Date(nowMs).toISOString(), new Date(nowMs + this.settings.leaseMs).toISOString());
    if (!held) {
      if (this.leader) this.log.warn({ holder: this.holder }, "reconcile-lease-lost");
      this.leader = false;
      this.lastStates = undefined;
      return;
    }
    if (!this.leader) this.log.info({ holder: this.holder }, "reconcile-lease-taken");
    this.leader = true;
    if (this.passHook) await this.passHook(nowMs).catch((error: unknown) => this.log.warn({ error: (error as Error).message }, "reconcile-pass-hook-failed"));

    const { models, statuses, rows, intents, observed, canaries } = await this.observe(nowMs);
    const events: NewEvent[] = [];
    const at = new Date(nowMs).toISOString();
    const event = (kind: string, message: string, facts: { model?: string; replica?: string; node?: string } = {}) =>
      events.push({ at, kind, message, model: facts.model ?? null, replica: facts.replica ?? null, node: facts.node ?? null });

    // Intents whose replica is gone: a stop finished (the agent reported it stopped).
    const rowIds = new Set(rows.map((row) => row.id));
    for (const intent of intents) {
      if (rowIds.has(intent.id)) continue;
      await deleteReplicaIntent(this.store.db, intent.id);
      if (intent.withdrawn_at) event("replica-stopped", `replica ${intent.id} of ${intent.model} stopped`, { model: intent.model, replica: intent.id });
    }
    const statusOf = new Map(statuses.map((status) => [status.model, status]));

    // replica-ready, once per replica (not on the first pass of a new leader: it would announce the whole fleet).
    const states = new Map(observed.replicas.map((replica) => [replica.id, replica.state]));
    if (this.lastStates) {
      for (const replica of observed.replicas) {
        if (replica.state === "ready" && this.lastStates.get(replica.id) !== "ready") {
          event("replica-ready", `replica ${replica.id} of ${replica.model} is ready on ${replica.node}`, { model: replica.model, replica: replica.id, node: replica.node });
        }
      }
    }
    this.lastStates = states;
    for (const replica of observed.replicas) {
      // A replica that serves ends the model's failure streak (the last failure stays shown).
      const status = statusOf.get(replica.model);
      if (replica.managed && replica.state === "ready" && status && status.failures > 0) {
        await updateModelStatus(this.store.db, replica.model, { failures: 0, backoff_until: null }, at);
        statusOf.set(replica.model, { ...status, failures: 0, backoff_until: null });
      }
    }

    const stable = models.filter((model) => !model.entry.external).map((model) => this.desiredModel(model, statusOf.get(model.name)));
    const trials = canaryModels(models, canaries, (model) => this.log.warn({ model }, "canary-revision-unusable")).map(({ model, revision, replicas }) => ({
      ...this.desiredModel(model, undefined),
      min: replicas,
      max: replicas,
      targetInFlight: undefined,
      canary: { revision },
    }));
    const desired = { models: [...stable, ...trials] };
    const actions = diff(desired, observed, this.settings);
    // Each action's events are written right after it, so whoever sees its effect finds its event too.
    await insertEvents(this.store.db, events.splice(0));
    for (const action of actions) {
      if (this.stopped) break;
      try {
        await this.execute(action, statusOf, event, at, nowMs);
      } catch (error) {
        this.log.warn({ action: action.kind, model: action.model, error: (error as Error).message }, "reconcile-action-failed");
      }
      await insertEvents(this.store.db, events.splice(0));
    }
    await trimEvents(this.store.db, this.settings.eventsKept);
  }

  private desiredModel(model: CatalogModel, status: ModelStatusRow | undefined): DesiredModel {
    return {
      name: model.name,
      modelClass: model.class,
      min: model.scaling.min,
      max: model.scaling.max,
      idleTimeoutMs: parseDuration(model.scaling.idle_timeout) ?? 600_000,
      targetInFlight: model.entry.target?.in_flight,
      profiles: demandProfiles(model, this.facts),
      demandAtMs: status?.demand_at ? Date.parse(status.demand_at) : undefined,
      backoffUntilMs: status?.backoff_until ? Date.parse(status.backoff_until) : undefined,
      restartBeforeMs: status?.restart_before ? Date.parse(status.restart_before) : undefined,
      restartInPlace: status?.restart_in_place === 1,
      busyAtMs: this.busyAt.get(model.name),
      placement: status?.placement_state ? { state: status.placement_state, reason: status.placement_reason } : undefined,
    };
  }

  private async execute(
    action: Action,
    statusOf: Map<string, ModelStatusRow>,
    event: (kind: string, message: string, facts?: { model?: string; replica?: string; node?: string }) => void,
    at: string,
    nowMs: number,
  ): Promise<void> {
    const db = this.store.db;
    switch (action.kind) {
      case "record-failure": {
        const failures = (statusOf.get(action.model)?.failures ?? 0) + 1;
        const waitMs = backoffMs(failures, this.settings.backoffInitialMs, this.settings.backoffMaxMs);
        const retryAt = new Date(nowMs + waitMs).toISOString();
        await updateModelStatus(db, action.model, { failures, last_failure: action.reason, last_failure_at: at, backoff_until: retryAt }, at);
        statusOf.set(action.model, { ...(statusOf.get(action.model) ?? emptyModelStatus(action.model, at)), failures, backoff_until: retryAt });
        event("replica-failed", `replica ${action.id} of ${action.model} on ${action.node} failed (${failures} in a row; next start in ${Math.round(waitMs / 1000)} s): ${action.reason}`, {
          model: action.model,
          replica: action.id,
          node: action.node,
        });
        // Clears it on its agent and forgets the row, so its cards are free for the next start.
        await this.fleet.stopReplica(action.id, false).catch(() => undefined);
        await deleteReplicaIntent(db, action.id);
        return;
      }
      case "abandon":
        await withdrawReplicaIntent(db, action.id, action.model, at, action.reason);
        // On a lost node the stop is kept and delivered when the node reports again.
        await this.fleet.stopReplica(action.id, false).catch(() => undefined);
        event("replica-lost", `replica ${action.id} of ${action.model} is on lost node ${action.node}; it is replaced elsewhere and stopped if the node returns`, {
          model: action.model,
          replica: action.id,
          node: action.node,
        });
        return;
      case "withdraw":
        await withdrawReplicaIntent(db, action.id, action.model, at, action.reason);
        event(action.preemptedFor ? "replica-preempted" : "replica-draining", `replica ${action.id} of ${action.model} on ${action.node} leaves routing and drains: ${action.reason}`, {
          model: action.model,
          replica: action.id,
          node: action.node,
        });
        return;
      case "stop":
        await this.fleet.stopReplica(action.id, true);
        return;
      case "resume":
        if (this.starting.has(action.id)) return;
        this.starting.add(action.id);
        try {
          await this.fleet.resumeStart(action.id);
          event("replica-started", `replica ${action.id} of ${action.model} sent again to ${action.node} (its start was recorded but not confirmed)`, { model: action.model, replica: action.id, node: action.node });
        } finally {
          this.starting.delete(action.id);
        }
        return;
      case "start": {
        const cards = action.cards.length > 0 ? ` cards ${action.cards.join(",")}` : " (CPU)";
        try {
          const id = await this.fleet.startPlaced(action);
          event("replica-placed", `${action.model}/${action.profile} placed on ${action.node}${cards}`, { model: action.model, replica: id, node: action.node });
          event("replica-started", `replica ${id} of ${action.model} started on ${action.node}`, { model: action.model, replica: id, node: action.node });
        } catch (error) {
          event("replica-failed", `${action.model}/${action.profile} could not be started on ${action.node}${cards}: ${(error as Error).message}`, { model: action.model, node: action.node });
        }
        return;
      }
      case "placement": {
        await updateModelStatus(db, action.model, { placement_state: action.state, placement_reason: action.reason }, at);
        if (action.state === "unplaceable") event("model-unplaceable", `${action.model} cannot be placed: ${action.reason ?? "no reason given"}`, { model: action.model });
        if (action.state === "waiting" && action.reason) event("model-waiting", `${action.model}: ${action.reason}`, { model: action.model });
        return;
      }
      case "restart-finished":
        await updateModelStatus(db, action.model, { restart_before: null, restart_in_place: 0 }, at);
        event("model-restarted", `every replica of ${action.model} was replaced`, { model: action.model });
        return;
      case "demand-seen": {
        // Written at most once a second per model: a busy model would otherwise write on every pass for nothing.
        const previous = statusOf.get(action.model)?.demand_at;
        if (previous && nowMs - Date.parse(previous) < 1000) return;
        await updateModelStatus(db, action.model, { demand_at: at }, at);
        return;
      }
      case "busy":
        this.busyAt.set(action.model, nowMs);
        return;
    }
  }

  /** Records a request for an on-demand model (the gateway calls it): a replica starts on the next pass, and the idle timeout starts over. */
  async demand(model: string): Promise<string> {
    const at = new Date(this.now()).toISOString();
    await updateModelStatus(this.store.db, model, { demand_at: at }, at);
    this.wake();
    return at;
  }

  /**
   * Starts a rolling restart: every replica the reconciler placed before now
   * is replaced, each new one started beside the old and the old drained once
   * it is ready. Without room for one replica beside them it refuses (nothing
   * is changed) and says that --in-place stops each first.
   */
  async requestRestart(model: CatalogModel, inPlace: boolean, actor: string): Promise<{ restart_before: string; in_place: boolean; replicas: number }> {
    const nowMs = this.now();
    const { observed } = await this.observe(nowMs);
    const replicas = observed.replicas.filter((replica) => replacedByRestart(replica, model.name));
    if (!inPlace && replicas.length > 0) await this.refuseWithoutRoom(model, observed, `llmgw ctl restart --model ${model.name} --in-place`);
    const at = new Date(nowMs).toISOString();
    await updateModelStatus(this.store.db, model.name, { restart_before: at, restart_in_place: inPlace ? 1 : 0 }, at);
    await insertEvents(this.store.db, [
      { at, kind: "model-restarting", model: model.name, replica: null, node: null, message: `${actor} restarts ${model.name}${inPlace ? " in place" : ""}: ${replicas.length} replica${replicas.length === 1 ? "" : "s"} to replace` },
    ]);
    this.wake();
    return { restart_before: at, in_place: inPlace, replicas: replicas.length };
  }

  /**
   * Refuses (no_room) when one replica of `model` as given could not be
   * placed beside the replicas running now, naming `inPlaceCommand` as the
   * way out. A change that restarts by surge asks this with the model as it
   * will be, before writing anything, so a refusal leaves the catalog as it was.
   */
  async refuseWithoutRoom(model: CatalogModel, observed: Observed | undefined, inPlaceCommand: string): Promise<void> {
    const seen = observed ?? (await this.observe(this.now())).observed;
    if (!seen.replicas.some((replica) => replacedByRestart(replica, model.name))) return;
    const classes = new Map((await this.catalog.list()).map((candidate) => [candidate.name, candidate.class]));
    const snapshot = fleetSnapshot(seen, (name) => classes.get(name) ?? "opportunistic");
    const result = placeReplicas(snapshot, [{ model: model.name, modelClass: model.class, count: 1, profiles: demandProfiles(model, this.facts) }]);
    if (result.placements.length === 0) {
      throw new DomainError(
        "no_room",
        `no room to start a replica of ${model.name} beside the ones it replaces: ${result.refusals[0]?.reason ?? "no node fits"}`,
        `Run \`${inPlaceCommand}\` to stop each replica before its replacement starts (it serves from one replica fewer meanwhile), or free cards first.`,
      );
    }
  }

  /** Cordons, uncordons or drains a node (stored on the node; the next pass acts on it). */
  async controlNode(node: string, change: { cordoned: boolean; draining: boolean }, actor: string): Promise<void> {
    const at = new Date(this.now()).toISOString();
    await setNodeControl(this.store.db, { node, cordoned: change.cordoned ? 1 : 0, draining: change.draining ? 1 : 0, updated_at: at });
    const kind = change.draining ? "node-draining" : change.cordoned ? "node-cordoned" : "node-uncordoned";
    const what = change.draining ? "drains it: its replicas move elsewhere" : change.cordoned ? "cordons it: nothing new is placed there" : "uncordons it: replicas may be placed there again";
    await insertEvents(this.store.db, [{ at, kind, model: null, replica: null, node, message: `${actor} ${what}` }]);
    this.wake();
  }
}

/** A replica a restart of `model` replaces: the reconciler's own, live, not already leaving. */
function replacedByRestart(replica: ObservedReplica, model: string): boolean {
  return replica.model === model && replica.managed && replica.withdrawnAtMs === undefined && replica.state !== "failed" && replica.state !== "stopped" && replica.state !== "lost";
}

/**
 * A model's profiles as placement takes them, in the model's order of
 * preference, with the bytes each card must hold when the model's files have
 * been read (the planner's own arithmetic at the model's context).
 */
function demandProfiles(model: CatalogModel, facts: ModelFactsCache | undefined): DemandProfile[] {
  return model.profiles.map((profile) => {
    // A ComfyUI profile's source is a repository of many files, not one checkpoint to price: it is not read.
    const read = profile.gpus > 0 && profile.engine !== "comfyui" ? facts?.get(profile.source) : undefined;
    return demandProfile(profile, read ? demandBytesPerCard(read, profile, model.entry.context) : undefined);
  });
}

