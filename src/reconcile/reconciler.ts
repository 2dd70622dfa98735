import { randomUUID } from "node:crypto";
import { setImmediate } from "node:timers/promises";
import type { CatalogModel } from "../catalog/catalog-model.js";
import type { ReconcileSettings } from "../catalog/reconcile-settings.js";
import type { ReplicaViewState } from "../protocol/views.js";
import { listReplicas } from "../store/fleet-rows.js";
import type { Store } from "../store/open-store.js";
import {
  deleteReplicaIntent,
  holdLease,
  insertEvents,
  listModelStatus,
  listReplicaIntents,
  releaseLease,
  setNodeControl,
  trimEvents,
  updateModelStatus,
  emptyModelStatus,
  type ModelStatusRow,
  type NewEvent,
} from "../store/reconcile-rows.js";
import { diff } from "./diff.js";
import { nextMoment } from "./next-moment.js";
import { fleetSnapshot } from "./fleet-snapshot.js";
import { placeReplicas } from "./placement-functions.js";
import { DomainError } from "../errors/domain-error.js";
import { demandCardBytes, demandProfile, snapshotCard, type CardBytes, type DemandProfile } from "../placement/index.js";
import { ModelFactsCache, type ModelFactsReader } from "./model-facts-cache.js";
import { listCanaries } from "../store/canary-rows.js";
import { canaryModels } from "./canary-models.js";
import type { Desired, Observed, ObservedNode, ObservedReplica } from "./types.js";
import type { CanaryRow } from "../store/canary-rows.js";
import type { Change } from "../protocol/dry-run.js";
import { previewChanges } from "./preview-changes.js";
import { engineArgv } from "./engine-argument-changes.js";
import { demandProfiles, desiredModel } from "./desired-model.js";
import { executeAction, type ActionContext } from "./execute-action.js";
import { profilesForReplacement } from "./profile-rank.js";
import type { ReconcilerCatalog, ReconcilerFleet, ReconcilerLog } from "./reconciler-ports.js";
import type { EventKind } from "../protocol/event-kinds.js";

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


/**
 * Lets the event loop run what waits (heartbeats, reads) before a pass's
 * next step. A pass over thousands of models is otherwise one long task.
 * Reads made after it may see writes made during it; a pass is
 * level-triggered, so the next one settles whatever this one missed.
 */
const turn = () => setImmediate();

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
 * How long a start on a simulated node waits for its model's files to be
 * read, so the replica gets the planner's figures: the demo's stand-in hub
 * answers in milliseconds; a hub that does not answer costs the pass this once.
 */
const simulatedStartWaitMs = 3000;

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
    readFacts?: ModelFactsReader,
  ) {
    this.facts = readFacts ? new ModelFactsCache(readFacts, () => this.wake()) : undefined;
  }

  private readonly facts: ModelFactsCache | undefined;

  /** A model's profiles as placement takes them, with each card's bytes once its files were read: for callers that ask placement's filters outside a pass. */
  private get actionContext(): ActionContext {
    return { store: this.store, settings: this.settings, fleet: this.fleet, starting: this.starting, busyAt: this.busyAt, simulationOf: (model, profile, node) => this.simulationOf(model, profile, node) };
  }

  /** The models of the pass under way, for what its actions need of the catalog. */
  private passModels = new Map<string, CatalogModel>();
  /** The nodes of the pass under way whose agents run the simulated engine. */
  private passSimulatedNodes = new Set<string>();

  /**
   * The weights the planner puts on each card of a replica of this profile
   * (the whole model for a CPU one), once its files were read. Sent with
   * every start: a simulated engine decodes at the card's bandwidth over
   * them, as a real one would; a real engine ignores them.
   */
  private async simulationOf(modelName: string, profileName: string, node: string): Promise<{ weights_bytes_per_card: number } | undefined> {
    const model = this.passModels.get(modelName);
    const profile = model?.profiles.find((candidate) => candidate.name === profileName);
    if (!model || !profile || profile.engine === "comfyui" || !this.facts) return undefined;
    // A simulated replica placed before its files were read would time itself by defaults for its whole life: the read is waited for, briefly.
    const facts = this.passSimulatedNodes.has(node) ? await this.facts.whenRead(profile.source, simulatedStartWaitMs) : this.facts.get(profile.source);
    if (!facts) return undefined;
    const weights = demandCardBytes(facts, profile.gpus > 0 ? profile : { ...profile, gpus: 1 }, model.entry.context)?.weights;
    return weights === undefined ? undefined : { weights_bytes_per_card: Math.round(weights) };
  }

  demandProfilesOf(model: CatalogModel): DemandProfile[] {
    return demandProfiles(model, this.facts);
  }

  /** The planner's figures for one card of a replica of this profile, as placement prices it; undefined until the model's files are read. */
  cardBytesOf(model: CatalogModel, profileName: string): CardBytes | undefined {
    const profile = model.profiles.find((candidate) => candidate.name === profileName);
    if (!profile || profile.gpus <= 0 || profile.engine === "comfyui") return undefined;
    const facts = this.facts?.get(profile.source);
    return facts ? demandCardBytes(facts, profile, model.entry.context) : undefined;
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

  /**
   * Reads what should run and what runs, as the pure functions take it. The
   * reads are taken one at a time with a turn of the event loop between them:
   * embedded SQLite answers inside the turn, so read together at 5,000 models
   * they held the server for tens of milliseconds in one go, and every
   * heartbeat that arrived meanwhile waited.
   */
  private async observe(nowMs: number) {
    const models = await this.catalog.list();
    await turn();
    const statuses = await listModelStatus(this.store.db);
    await turn();
    const nodes = await this.fleet.listNodes();
    await turn();
    const rows = await listReplicas(this.store.db);
    await turn();
    const [intents, canaries] = await Promise.all([listReplicaIntents(this.store.db), listCanaries(this.store.db)]);
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
          cards: node.gpus.map(snapshotCard),
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

    const simulatedNodes = nodes.filter((node) => node.simulated).map((node) => node.name);
    return { models, statuses, rows, intents, observed, canaries, simulatedNodes, nodes };
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

    const { models, statuses, rows, intents, observed, canaries, simulatedNodes, nodes } = await this.observe(nowMs);
    this.passModels = new Map(models.map((model) => [model.name, model]));
    this.passSimulatedNodes = new Set(simulatedNodes);
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
    for (const action of actions) {
      if (this.stopped) break;
      // A first pass over a new catalog acts thousands of times; each action's writes are answered inside the turn.
      await turn();
      try {
        await executeAction(this.actionContext, action, statusOf, event, at, nowMs);
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
    const { models, statuses, observed, canaries } = await this.observe(nowMs);
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
    const replicas = await this.checkRestart(model, inPlace, nowMs);
    const at = new Date(nowMs).toISOString();
    await updateModelStatus(this.store.db, model.name, { restart_before: at, restart_in_place: inPlace ? 1 : 0 }, at);
    await insertEvents(this.store.db, [
      { at, kind: "model-restarting", model: model.name, replica: null, node: null, message: `${actor} restarts ${model.name}${inPlace ? " in place" : ""}: ${replicas.length} replica${replicas.length === 1 ? "" : "s"} to replace` },
    ]);
    this.wake();
    return { restart_before: at, in_place: inPlace, replicas: replicas.length };
  }

  /** Refuses a restart as `requestRestart` would, writing nothing; answers the replicas it would replace. */
  async checkRestart(model: CatalogModel, inPlace: boolean, nowMs: number = this.now()): Promise<ObservedReplica[]> {
    const { observed } = await this.observe(nowMs);
    const replicas = observed.replicas.filter((replica) => replacedByRestart(replica, model.name));
    if (!inPlace && replicas.length > 0) await this.refuseWithoutRoom(model, observed, `llmgw ctl restart --model ${model.name} --in-place`);
    return replicas;
  }

  /**
   * Refuses (no_room) when one replica of `model` as given could not be
   * placed beside the replicas running now, naming `inPlaceCommand` as the
   * way out. A change that restarts by surge asks this with the model as it
   * will be, before writing anything, so a refusal leaves the catalog as it was.
   */
  async refuseWithoutRoom(model: CatalogModel, observed: Observed | undefined, inPlaceCommand: string): Promise<void> {
    const seen = observed ?? (await this.observe(this.now())).observed;
    const replaced = seen.replicas.filter((replica) => replacedByRestart(replica, model.name));
    if (replaced.length === 0) return;
    const classes = new Map((await this.catalog.list()).map((candidate) => [candidate.name, candidate.class]));
    const snapshot = fleetSnapshot(seen, (name) => classes.get(name) ?? "opportunistic");
    // The replacement goes on the replaced replica's profile (or a better one), never a worse one: the diff holds a restart to that too.
    const profiles = profilesForReplacement({ ...desiredModel(model, undefined, this.facts, undefined) }, replaced);
    const result = placeReplicas(snapshot, [{ model: model.name, modelClass: model.class, count: 1, profiles }]);
    if (result.placements.length === 0) {
      const profile = profiles[profiles.length - 1]?.name ?? "any";
      throw new DomainError(
        "no_room",
        `no room to start a replica of ${model.name} on its profile ${profile} beside the ones it replaces: ${result.refusals[0]?.reason ?? "no node fits"}`,
        `Run \`${inPlaceCommand}\` to stop each replica before its replacement starts on the same profile (it serves from one replica fewer meanwhile), or free what profile ${profile} needs (\`llmgw ctl replicas\` shows what holds the cards) first. A change never moves a replica to a worse profile to make room.`,
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


