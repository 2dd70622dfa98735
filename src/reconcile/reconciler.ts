import { randomUUID } from "node:crypto";
import type { CatalogModel, ReconcileSettings } from "../catalog/index.js";
import type { ReplicaViewState, Change, EventKind } from "../protocol/index.js";
import {
  type Store,
  deleteReplicaIntent,
  holdLease,
  insertEvents,
  releaseLease,
  trimEvents,
  updateModelStatus,
  emptyModelStatus,
  type ModelStatusRow,
  type NewEvent,
  type CanaryRow,
} from "../store/index.js";
import { diff } from "./diff.js";
import { nextMoment } from "./next-moment.js";
import { demandCardBytes, demandProfile } from "../placement/index.js";
import { canaryModels } from "./canary-models.js";
import type { Desired, Observed } from "./types.js";
import { previewChanges } from "./preview-changes.js";
import { engineArgv } from "./engine-argument-changes.js";
import { desiredModel } from "./desired-model.js";
import { executeAction, type ActionContext } from "./execute-action.js";
import type { ReconcilerCatalog, ReconcilerFacts, ReconcilerFleet, ReconcilerLog } from "./reconciler-ports.js";
import { observe, type Observation } from "./observe.js";
import { readFleetState, turn } from "./read-fleet-state.js";
import { startSimulation } from "./start-simulation.js";

/**
 * A change a dry run asks about: the catalog it would produce, a restart or a
 * demand it would record, a node control it would set, the canaries it would
 * leave running.
 */
export interface ChangeToPreview {
  readonly models?: readonly CatalogModel[];
  readonly restart?: { readonly model: string; readonly inPlace: boolean };
  readonly demand?: string;
  readonly node?: { readonly name: string; readonly cordoned: boolean; readonly draining: boolean };
  /** The canaries the change would leave running (one started, one ended); the stored ones when not given. */
  readonly canaries?: readonly CanaryRow[];
  /** A canary promoted: its replicas become the model's stable ones, placed now (so the restart keeps them). */
  readonly promote?: string;
  /** Everything the passes would do after the change, not only what it adds: a forecast of where a model will stand (a refusal it already had included). */
  readonly whole?: boolean;
}

function earliestOf(moments: readonly (number | undefined)[]): number | undefined {
  const known = moments.filter((moment): moment is number => moment !== undefined);
  return known.length === 0 ? undefined : Math.min(...known);
}

/** The shortest time between two passes woken by changes. */
const wakeSpacingMs = 250;
/**
 * Passes woken back to back keep at least this many times a pass's own
 * length between them, so a large fleet whose reports change all the time
 * leaves the server four fifths of its time for heartbeats and reads
 * (a pass over 2,000 models and 500 nodes takes tens of milliseconds).
 */
const restPerPassTime = 4;

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
  /** Runs first in every pass this server leads (the canary gate), so what it decides is acted on in the same pass; answers when it wants to be asked again. */
  private passHook: ((nowMs: number) => Promise<number | undefined>) | undefined;
  /** The earliest moment the last pass saw ahead at which time alone changes a decision (see nextMoment). */
  private nextDueMs: number | undefined;

  constructor(
    private readonly store: Store,
    private readonly catalog: ReconcilerCatalog,
    private readonly fleet: ReconcilerFleet,
    private readonly settings: ReconcileSettings,
    private readonly log: ReconcilerLog,
    private readonly now: () => number = Date.now,
    /** The planner's figures of each model's files; without them placement checks card counts and classes only. */
    private readonly facts?: ReconcilerFacts,
  ) {}

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

  onPass(hook: (nowMs: number) => Promise<number | undefined>): void {
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
    this.schedule(Math.max(50, this.lastPassAt + this.wakeSpacing() - this.now()));
  }

  /** How long the last pass took, from its start to its end. */
  private lastPassMs = 0;

  private wakeSpacing(): number {
    // Never longer than the pass's own interval: a change is acted on no later than without it.
    return Math.min(Math.max(wakeSpacingMs, restPerPassTime * this.lastPassMs), this.settings.intervalMs);
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
    const startedAt = this.now();
    this.running = this.passOnce()
      .catch((error: unknown) => this.log.warn({ error: (error as Error).message }, "reconcile-pass-failed"))
      .finally(() => {
        this.running = undefined;
        this.lastPassMs = Math.max(0, this.now() - startedAt);
        if (this.stopped) return;
        const soon = this.again;
        this.again = false;
        this.schedule(soon ? this.wakeSpacing() : this.untilNextPass());
      });
    return await this.running;
  }

  /**
   * With nothing waking it: the interval pass (which also renews the lease),
   * or sooner when a moment the last pass saw ahead comes first, kept at
   * least the wake spacing away so a moment that does not lead to an action
   * cannot make passes run back to back.
   */
  private untilNextPass(): number {
    const regular = Math.min(this.settings.intervalMs, this.settings.leaseMs / 3);
    if (this.nextDueMs === undefined) return regular;
    return Math.min(regular, Math.max(this.wakeSpacing(), this.nextDueMs - this.now()));
  }

  /** What the store and the fleet registry hold now, as the pure decisions take it. */
  private async observeNow(nowMs: number): Promise<Observation> {
    return observe(await readFleetState({ store: this.store, catalog: this.catalog, fleet: this.fleet }), nowMs);
  }

  /** What one pass's actions need: the observation travels with them, so nothing of the pass outlives it. */
  private actionContext(observation: Observation): ActionContext {
    return {
      store: this.store,
      settings: this.settings,
      fleet: this.fleet,
      starting: this.starting,
      busyAt: this.busyAt,
      simulationOf: (model, profile, node) => startSimulation(this.facts, observation, { model, profile, node }),
    };
  }

  private async passOnce(): Promise<void> {
    const nowMs = this.now();
    this.lastPassAt = nowMs;
    this.nextDueMs = undefined;
    const held = await holdLease(this.store.db, this.holder, new Date(nowMs).toISOString(), new Date(nowMs + this.settings.leaseMs).toISOString());
    if (!held) {
      if (this.leader) this.log.warn({ holder: this.holder }, "reconcile-lease-lost");
      this.leader = false;
      this.lastStates = undefined;
      return;
    }
    if (!this.leader) this.log.info({ holder: this.holder }, "reconcile-lease-taken");
    this.leader = true;
    const hookDueMs = this.passHook
      ? await this.passHook(nowMs).catch((error: unknown) => {
          this.log.warn({ error: (error as Error).message }, "reconcile-pass-hook-failed");
          return undefined;
        })
      : undefined;

    const observation = await this.observeNow(nowMs);
    const { models, statuses, rows, intents, observed, canaries, nodes } = observation;
    const events: NewEvent[] = [];
    const at = new Date(nowMs).toISOString();
    const event = (kind: EventKind, message: string, facts: { model?: string; replica?: string; node?: string } = {}) =>
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

    await turn();
    const desired = this.desiredState(models, statusOf, canaries, (model) => this.log.warn({ model }, "canary-revision-unusable"));
    await turn();
    const actions = diff(desired, observed, this.settings);
    this.nextDueMs = earliestOf([hookDueMs, nextMoment(desired, observed, this.settings), this.fleet.nextNodeStateChangeMs(nodes)]);
    // Each action's events are written right after it, so whoever sees its effect finds its event too.
    await insertEvents(this.store.db, events.splice(0));
    const context = this.actionContext(observation);
    for (const action of actions) {
      if (this.stopped) break;
      // A first pass over a new catalog acts thousands of times; each action's writes are answered inside the turn.
      await turn();
      try {
        await executeAction(context, action, statusOf, event, at, nowMs);
      } catch (error) {
        this.log.warn({ action: action.kind, model: action.model, error: (error as Error).message }, "reconcile-action-failed");
      }
      await insertEvents(this.store.db, events.splice(0));
    }
    await trimEvents(this.store.db, this.settings.eventsKept);
  }

  /** What should run: every served model of the catalog, and each running canary as a model of its own. */
  private desiredState(models: readonly CatalogModel[], statusOf: ReadonlyMap<string, ModelStatusRow>, canaries: readonly CanaryRow[], unusable: (model: string) => void): Desired {
    const stable = models.filter((model) => !model.entry.external).map((model) => desiredModel(model, statusOf.get(model.name), this.facts, this.busyAt.get(model.name)));
    const trials = canaryModels(models, canaries, unusable).map(({ model, revision, replicas }) => ({
      ...desiredModel(model, undefined, this.facts, this.busyAt.get(model.name)),
      min: replicas,
      max: replicas,
      targetInFlight: undefined,
      canary: { revision },
    }));
    return { models: [...stable, ...trials] };
  }

  /**
   * What a change would make this reconciler do, writing nothing: its passes
   * run forward (`previewChanges`) on the catalog the change would produce,
   * the restart or demand it would record and the node control it would
   * set, against the fleet as it is, less what they would do without it.
   * Started replicas carry their engine arguments (the driver's) and KV cache
   * per card (the planner's, once the model's files were read).
   */
  async preview(change: ChangeToPreview, gpuMemoryUtilization: number): Promise<Change[]> {
    const nowMs = this.now();
    const { models, statuses, observed, canaries } = await this.observeNow(nowMs);
    const statusOf = new Map(statuses.map((status) => [status.model, status]));
    const ignore = () => undefined;
    const nextModels = change.models ?? models;
    const nextStatusOf = new Map(statusOf);
    const at = new Date(nowMs).toISOString();
    if (change.restart) {
      const row = nextStatusOf.get(change.restart.model) ?? emptyModelStatus(change.restart.model, at);
      nextStatusOf.set(change.restart.model, { ...row, restart_before: at, restart_in_place: change.restart.inPlace ? 1 : 0 });
    }
    if (change.demand) nextStatusOf.set(change.demand, { ...(nextStatusOf.get(change.demand) ?? emptyModelStatus(change.demand, at)), demand_at: at });
    const node = change.node;
    const promoted = change.promote;
    const nextObserved: Observed = {
      ...observed,
      nodes: node ? observed.nodes.map((candidate) => (candidate.name === node.name ? { ...candidate, cordoned: node.cordoned, draining: node.draining, schedulable: candidate.state === "ready" && !node.cordoned } : candidate)) : observed.nodes,
      replicas: promoted
        ? observed.replicas.map((replica) => (replica.model === promoted && replica.arm === "canary" ? { ...replica, arm: undefined, placedAtMs: nowMs } : replica))
        : observed.replicas,
    };
    const byName = new Map(nextModels.map((model) => [model.name, model]));
    return previewChanges({
      before: change.whole ? { desired: { models: [] }, observed: { ...observed, replicas: [] } } : { desired: this.desiredState(models, statusOf, canaries, ignore), observed },
      after: { desired: this.desiredState(nextModels, nextStatusOf, change.canaries ?? canaries, ignore), observed: nextObserved },
      settings: this.settings,
      startFacts: (name, profileName, cards) => {
        const model = byName.get(name);
        const profile = model?.profiles.find((candidate) => candidate.name === profileName);
        if (!model || !profile) return { modelClass: model?.class ?? "standard", memoryBytes: 0, cpuCores: 0 };
        const read = profile.gpus > 0 && profile.engine !== "comfyui" ? this.facts?.get(profile.source) : undefined;
        return {
          modelClass: model.class,
          memoryBytes: demandProfile(profile, undefined).memoryBytes,
          cpuCores: profile.cpu_cores ?? 0,
          engineArgs: engineArgv(model, profile, gpuMemoryUtilization, cards),
          kvBytesPerCard: read ? demandCardBytes(read, profile, model.entry.context)?.kvCache : undefined,
        };
      },
    });
  }
}
