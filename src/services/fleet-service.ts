import { profilePosition, resolveSecretEnv, resolveModel, type CatalogModel, type ResolvedProfile, entryAtRevision } from "../catalog/index.js";
import { randomBytes } from "node:crypto";
import type { Readable } from "node:stream";
import { z } from "zod";
import {
  replicaIdSchema,
  type HeartbeatResponse,
  type JoinResponse,
  type ReplicaProgress,
  type ReplicaSpec,
  type ReplicaStatus,
  type NodeView,
  type ReplicaCounts,
  type ReplicaView,
} from "../protocol/index.js";
import { newToken, ControlSecrets } from "../auth/index.js";
import { DomainError } from "../errors/index.js";
import { chooseCards, type NodeState, type InventoryNode, holdsCards, buildReplicaSpec, storableReplicaSpec } from "../fleet/index.js";
import {
  deleteReplica,
  findNode,
  findReplica,
  findReplicas,
  listNodes,
  listNodeTimes,
  listReplicaHoldings,
  listReplicaProgress,
  listReplicas,
  readFleetRevisions,
  updateReplica,
  upsertReplica,
  type StoredNode,
  type StoredReplica,
  type Store,
  deleteReplicaIntent,
  insertReplicaIntent,
  listNodeControls,
  listReplicaIntents,
  findCanary,
} from "../store/index.js";
import { loadAdapterOnAgent, replicaLogsFromAgent, startReplicaOnAgent, stopReplicaOnAgent, unloadAdapterOnAgent, type AgentAddress } from "./agent-client.js";
import type { CatalogService } from "./catalog-service.js";
import { cardOwners, nodeView, replicaCountsOf, replicaView, replicaViewState, type NodeControl, type ReplicaIntentView } from "./fleet-views.js";
import { checkNode, demandProfile, snapshotCard, type Snapshot } from "../placement/index.js";
import { heldReplica } from "./held-replica.js";
import type { FleetSettings } from "./fleet/fleet-settings.js";
import { checkHandPickedCards, checkNodeHasCards } from "./fleet/hand-picked-cards.js";
import { HeartbeatIntake, type FleetLog } from "./fleet/heartbeat-intake.js";
import { NodeJoin } from "./fleet/node-join.js";
import { NodeStates } from "./fleet/node-states.js";
import { NodesHeard } from "./fleet/nodes-heard.js";


export const startReplicaBodySchema = z.strictObject({
  model: z.string().min(1),
  node: z.string().min(1),
  profile: z.string().optional(),
  cards: z.array(z.number().int().min(0)).optional(),
  context: z.number().int().positive().optional(),
  id: replicaIdSchema.optional(),
  simulation: z.strictObject({ weights_bytes_per_card: z.number().int().min(0).optional(), load_ms: z.number().int().min(0).optional() }).optional(),
});
export type StartReplicaBody = z.infer<typeof startReplicaBodySchema>;

/** How old the node times a view key is worked out from may be (see FleetService.nodeTimes). */
const nodeTimesMaxAgeMs = 1000;

/**
 * The server's side of the fleet: join tokens, joins and
 * heartbeats, the node registry, and replicas started and stopped by hand on
 * a named node. The state of record for a replica is what its agent last
 * reported; the server adds what only it knows (the spec it sent, a stop it
 * asked for) and whether the node is still heard from.
 */
export class FleetService {
  readonly startedAtMs: number;
  private readonly serverKey: Buffer;

  constructor(
    private readonly store: Store,
    private readonly catalog: CatalogService,
    private readonly settings: FleetSettings,
    private readonly now: () => number = Date.now,
  ) {
    this.startedAtMs = now();
    this.serverKey = settings.serverKey ?? randomBytes(32);
    this.controlSecrets = new ControlSecrets(this.serverKey);
    const controlSecretOf = (node: Pick<StoredNode, "credential_hash">): string => this.controlSecretOf(node);
    this.joins = new NodeJoin(store, settings, now, controlSecretOf);
    this.heard = new NodesHeard(store, settings.heartbeatDeadlineMs, this.startedAtMs, now);
    this.heartbeats = new HeartbeatIntake(store, now, (node) => this.controlSecrets.of(node.credential_hash), this.heard, settings.agentDispatcher);
    this.states = new NodeStates(store, settings, this.startedAtMs, now, this.heard);
  }

  private readonly joins: NodeJoin;
  private readonly heartbeats: HeartbeatIntake;
  private readonly states: NodeStates;
  private readonly heard: NodesHeard;

  async createJoinToken(createdBy: string): Promise<{ token: string; created_at: string }> {
    return await this.joins.createJoinToken(createdBy);
  }

  async join(body: unknown): Promise<JoinResponse> {
    return await this.joins.join(body);
  }

  /** `log` gets what the agent is not told: a replica id it reports that belongs to another node, a pending stop that failed. */
  async heartbeat(authorization: string | undefined, body: unknown, log?: FleetLog): Promise<HeartbeatResponse> {
    return await this.heartbeats.heartbeat(authorization, body, log);
  }

  /** What the server presents to the node's agent; see server/control-secret.ts. */
  private controlSecretOf(node: Pick<StoredNode, "credential_hash">): string {
    return this.controlSecrets.of(node.credential_hash).secret;
  }

  private readonly controlSecrets: ControlSecrets;

  private iso(): string {
    return new Date(this.now()).toISOString();
  }

  /**
   * What the fleet's views depend on beside their rows: the revision the
   * store raises on every change they show, and each node's state now (time
   * alone makes a silent node lost). Equal keys mean equal views, except for
   * each node's `last_seen_at`, given here apart (it moves at every beat),
   * and a replica's fetch progress, which only the replica list shows: its
   * revision is given apart too, so the models, the nodes and the routing
   * table are not built again while a fetch moves.
   */
  async viewKey(): Promise<{ readonly key: string; readonly lastSeen: ReadonlyMap<string, string>; readonly progressRevision: number }> {
    // The revisions first: a change landing before the times are read gives newer rows under an older key, which the next read rebuilds, never the reverse.
    const revisions = await readFleetRevisions(this.store.db);
    const nodes = await this.nodeTimes();
    const states = this.states.nodeStates(nodes);
    const lastSeen = new Map(nodes.map((node) => [node.name, this.heard.lastSeenText(node)]));
    return { key: `${revisions.fleet}/${nodes.map((node) => states.get(node.name) ?? "lost").join(",")}`, lastSeen, progressRevision: revisions.progress };
  }

  /**
   * Every node's stored last-seen time, read at most once a second. Every list
   * read and every routing tick works out each node's state from these: at
   * 1,000 nodes, reading them at each call was the server's largest query
   * (1.5 ms, hundreds of times a second under load). What this server heard
   * itself is exact all the same (NodesHeard keeps it); a beat another server
   * sharing the store took is seen up to a second later, on top of the third
   * of the deadline it writes at. A stale read only ever makes a node look
   * more silent, so a view built from fresh rows under it is built again at
   * the next read, never kept past a change.
   */
  private async nodeTimes(): Promise<readonly { name: string; last_seen_at: string }[]> {
    const nowMs = this.now();
    const kept = this.keptNodeTimes;
    if (kept !== undefined && nowMs >= kept.readAtMs && nowMs - kept.readAtMs < nodeTimesMaxAgeMs) return await kept.times;
    const times = listNodeTimes(this.store.db);
    this.keptNodeTimes = { readAtMs: nowMs, times };
    times.catch(() => {
      if (this.keptNodeTimes?.times === times) this.keptNodeTimes = undefined;
    });
    return await times;
  }

  private keptNodeTimes: { readonly readAtMs: number; readonly times: Promise<{ name: string; last_seen_at: string }[]> } | undefined;

  /** Called after each heartbeat that changed what the reconciler decides on; the others change nothing it acts on. */
  whenHeartbeatDecisive(listener: () => void): void {
    this.heartbeats.whenDecisive(listener);
  }

  /** The next moment a node's state changes with no beat (see NodeStates), for the reconciler's timer. */
  nextNodeStateChangeMs(nodes: readonly Pick<NodeView, "name" | "last_seen_at">[]): number | undefined {
    return this.states.nextChangeMs(nodes);
  }

  async listNodes(): Promise<NodeView[]> {
    const [nodes, replicas, controls] = await Promise.all([listNodes(this.store.db), listReplicaHoldings(this.store.db), this.nodeControls()]);
    const states = this.states.nodeStates(nodes);
    const byNode = groupByNode(replicas);
    return nodes.map((node) => nodeView(this.heard.seen(node), states.get(node.name) ?? "lost", byNode.get(node.name) ?? [], controls.get(node.name)));
  }

  /** Cordon and drain, by node. */
  private async nodeControls(): Promise<Map<string, NodeControl>> {
    return new Map((await listNodeControls(this.store.db)).map((control) => [control.node, { cordoned: control.cordoned !== 0, draining: control.draining !== 0 }]));
  }

  /** Withdrawals the reconciler has made, by replica id. */
  private async replicaIntents(): Promise<Map<string, ReplicaIntentView>> {
    return new Map((await listReplicaIntents(this.store.db)).map((intent) => [intent.id, { withdrawnAt: intent.withdrawn_at, withdrawReason: intent.withdraw_reason, arm: intent.arm }]));
  }

  /** The fleet as the planner reads it (GET /api/v1/plan without --gpus): a card is free when no live replica holds it. */
  readonly inventoryNodes = async (): Promise<InventoryNode[]> =>
    (await this.listNodes()).map((node) => ({
      name: node.name,
      state: node.state,
      gpus: node.gpus.map((gpu) => ({ index: gpu.index, class: gpu.class, memoryBytes: gpu.memory_bytes, foreignBytes: gpu.memory_foreign_bytes ?? undefined, fabric: gpu.fabric, free: gpu.replica === null })),
      memoryBytes: node.memory_bytes,
      cpuCores: node.cpu_cores,
    }));

  async getNode(name: string): Promise<NodeView> {
    const node = await findNode(this.store.db, name);
    if (!node) throw this.nodeNotFound(name);
    const [state, replicas, controls] = await Promise.all([this.states.nodeStateByKey(node), listReplicaHoldings(this.store.db, { node: name }), this.nodeControls()]);
    return nodeView(this.heard.seen(node), state, replicas, controls.get(name));
  }

  private nodeNotFound(name: string): DomainError {
    return new DomainError("node_not_found", `no node named ${name} has joined this server`, "List nodes with `llmgw ctl nodes`; a new node joins with `llmgw agent --token` (token from `llmgw ctl node token`).");
  }

  async listReplicas(filter: { model?: string | undefined; node?: string | undefined } = {}): Promise<ReplicaView[]> {
    return (await this.replicaRowsWithViews(filter)).map(({ view }) => view);
  }

  /** Each replica row with its view, its node's state and the reconciler's intent read alongside. */
  private async replicaRowsWithViews(filter: { model?: string | undefined; node?: string | undefined } = {}): Promise<{ readonly row: StoredReplica; readonly view: ReplicaView }[]> {
    const [nodes, replicas, intents] = await Promise.all([listNodes(this.store.db), listReplicas(this.store.db, filter), this.replicaIntents()]);
    const states = this.states.nodeStates(nodes);
    const byName = new Map(nodes.map((node) => [node.name, this.heard.seen(node)]));
    return replicas.map((row) => ({ row, view: replicaView(row, byName.get(row.node), states.get(row.node), intents.get(row.id)) }));
  }

  /**
   * Every replica's view, with the progress each row held when read: the
   * replica list follows a fetch's progress apart from the other changes
   * (see viewKey), and compares this with replicaProgressNow to know which
   * views to build again.
   */
  async listReplicasWithProgress(): Promise<{ readonly views: ReplicaView[]; readonly progress: ReadonlyMap<string, ReplicaProgress | undefined> }> {
    const listed = await this.replicaRowsWithViews();
    return { views: listed.map(({ view }) => view), progress: new Map(listed.map(({ row }) => [row.id, row.status.progress])) };
  }

  /** Each fetch's progress now, read from its column alone. */
  async replicaProgressNow(): Promise<Map<string, ReplicaProgress>> {
    return await listReplicaProgress(this.store.db);
  }

  /** The views of these replicas as they are now; an id with no row is left out. */
  async replicasById(ids: readonly string[]): Promise<ReplicaView[]> {
    const rows = await findReplicas(this.store.db, ids);
    const names = [...new Set(rows.map((row) => row.node))];
    const [nodes, times, intents] = await Promise.all([Promise.all(names.map(async (name) => await findNode(this.store.db, name))), this.nodeTimes(), this.replicaIntents()]);
    const byName = new Map(nodes.filter((node) => node !== undefined).map((node) => [node.name, this.heard.seen(node)]));
    // Every node's time, as the whole list has it: whether the settling window is still open depends on all of them.
    const states = this.states.nodeStates(times);
    return rows.map((row) => replicaView(row, byName.get(row.node), states.get(row.node), intents.get(row.id)));
  }

  async getReplica(id: string): Promise<ReplicaView> {
    const row = await findReplica(this.store.db, id);
    if (!row) throw this.replicaNotFound(id);
    const [node, intents] = await Promise.all([findNode(this.store.db, row.node), this.replicaIntents()]);
    return replicaView(row, node === undefined ? undefined : this.heard.seen(node), node === undefined ? undefined : await this.states.nodeStateByKey(node), intents.get(id));
  }

  private replicaNotFound(id: string): DomainError {
    return new DomainError("replica_not_found", `no replica ${id} on this server`, "List replicas with `llmgw ctl replicas`.");
  }

  /**
   * Ready and draining replicas with the key each engine expects, for the
   * routing table (never for an API answer: the views leave the key out).
   */
  async routingReplicas(): Promise<(ReplicaView & { api_key: string | undefined })[]> {
    // A withdrawn replica shows no endpoint: traffic leaves it before its engine is told to drain.
    return (await this.replicaRowsWithViews()).flatMap(({ row, view }) => {
      // Loading replicas travel too, for the table's loading estimate; only ready and draining ones with an endpoint are routed to.
      if (!["ready", "draining", "pending", "fetching", "starting"].includes(view.state)) return [];
      // Replicas started before keys (or adopted without a spec) have none.
      return [{ ...view, api_key: row.spec?.api_key }];
    });
  }

  /**
   * A model's replicas that run or are about to (not failed, stopped, lost or
   * withdrawn), with the spec each was started from: whether its engine takes
   * an adapter at runtime depends on how it was started.
   */
  async liveReplicasWithSpecs(model: string): Promise<{ readonly view: ReplicaView; readonly spec: ReplicaSpec | null }[]> {
    const [nodes, replicas, intents] = await Promise.all([listNodes(this.store.db), listReplicas(this.store.db, { model }), this.replicaIntents()]);
    const states = this.states.nodeStates(nodes);
    const byName = new Map(nodes.map((node) => [node.name, this.heard.seen(node)]));
    return replicas.flatMap((row) => {
      const view = replicaView(row, byName.get(row.node), states.get(row.node), intents.get(row.id));
      return ["failed", "stopped", "lost", "draining"].includes(view.state) ? [] : [{ view, spec: row.spec }];
    });
  }

  /** Loads an adapter into a ready replica's running engine, or unloads one, through its agent, with the replica's own key. */
  async changeAdapterOnReplica(id: string, change: { action: "load"; adapter: { name: string; source: string } } | { action: "unload"; name: string }): Promise<void> {
    const row = await findReplica(this.store.db, id);
    if (!row) throw this.replicaNotFound(id);
    const { address } = await this.agentOf(row.node);
    const apiKey = row.spec?.api_key;
    if (change.action === "load") await loadAdapterOnAgent(address, id, change.adapter, apiKey);
    else await unloadAdapterOnAgent(address, id, change.name, apiKey);
  }

  /** Ready and counted replicas per model, for the model views. */
  readonly replicaCounts = async (): Promise<ReadonlyMap<string, ReplicaCounts>> => {
    const [nodes, replicas] = await Promise.all([this.nodeTimes(), listReplicaHoldings(this.store.db)]);
    const states = this.states.nodeStates(nodes);
    return replicaCountsOf(replicas.map((row) => ({ model: row.model, state: replicaViewState(row, states.get(row.node)) })));
  };

  /** How to call a node's agent (its control URL and the control secret it checks). */
  async agentAddress(nodeName: string): Promise<AgentAddress> {
    return (await this.agentOf(nodeName)).address;
  }

  private async agentOf(nodeName: string): Promise<{ node: StoredNode; address: AgentAddress; state: NodeState }> {
    const node = await findNode(this.store.db, nodeName);
    if (!node) throw this.nodeNotFound(nodeName);
    const state = await this.states.nodeStateByKey(node);
    return { node, address: { name: node.name, address: node.address, controlSecret: this.controlSecretOf(node), dispatcher: this.settings.agentDispatcher }, state };
  }

  /** The model's profile, at `revision` when given (a canary's replicas run the model at another revision). */
  private async profileOf(modelName: string, profileName: string | undefined, revision?: string): Promise<{ model: CatalogModel; profile: ResolvedProfile }> {
    const inForce = await this.catalog.get(modelName);
    const model = revision === undefined || inForce.entry.external ? inForce : resolveModel(entryAtRevision(inForce.entry, revision), inForce.source);
    if (model.entry.external) {
      throw new DomainError("invalid_profile", `${model.name} is an external model: it runs at its provider, not on a node`, "Start a model that has profiles.");
    }
    const profile = model.profiles[profilePosition(model.entry, profileName, "replica")];
    if (!profile) throw new Error("a profile found by position vanished");
    return { model, profile };
  }

  private newReplicaId(modelName: string): string {
    return `${modelName.replace(/[^A-Za-z0-9._-]/g, "-").replace(/^[^A-Za-z0-9]+/, "").slice(0, 100) || "replica"}-${randomBytes(3).toString("hex")}`;
  }

  /** The spec an agent is sent: secret_env read from the server's environment, and the replica's own key, which only gateways hold. */
  private replicaSpec(id: string, model: CatalogModel, profile: ResolvedProfile, cards: readonly number[], extra: Pick<StartReplicaBody, "context" | "simulation">): ReplicaSpec {
    return buildReplicaSpec({
      id,
      model,
      profile,
      cards,
      context: extra.context,
      gpuMemoryUtilization: this.settings.gpuMemoryUtilization,
      simulation: extra.simulation,
      serverEnvironment: process.env,
      apiKey: newToken("replica"),
      mirror: this.settings.mirror,
    });
  }

  /**
   * Records the replica (pending) before its agent is called, then calls it.
   * A crash in between leaves a row naming the node, cards and spec, which
   * the reconciler sends again (the agent answers a repeated start with what
   * runs), never an engine nobody knows of. The stored spec holds the names
   * secret_env reads, never their values.
   */
  private async launch(address: AgentAddress, spec: ReplicaSpec, profile: ResolvedProfile, managed: boolean, arm: "canary" | null = null): Promise<void> {
    const at = this.iso();
    const pending: ReplicaStatus = { id: spec.id, model: spec.model, profile: spec.profile, engine: spec.engine, cards: spec.cards, state: "fetching", since: at };
    await upsertReplica(this.store.db, { id: spec.id, node: address.name, status: pending, pending: true, spec: storableReplicaSpec(spec, profile), stop_requested: false, created_at: at, updated_at: at });
    await insertReplicaIntent(this.store.db, { id: spec.id, model: spec.model, managed: managed ? 1 : 0, placed_at: at, withdrawn_at: null, withdraw_reason: null, arm });
    await this.sendStart(address, spec, managed);
  }

  private async sendStart(address: AgentAddress, spec: ReplicaSpec, managed: boolean): Promise<void> {
    let status: ReplicaStatus;
    try {
      status = await startReplicaOnAgent(address, spec);
    } catch (error) {
      if (!managed) {
        // Started by hand: the caller is told, and nothing is left behind.
        await deleteReplica(this.store.db, spec.id);
        await deleteReplicaIntent(this.store.db, spec.id);
        throw error;
      }
      // Placed by the reconciler: a failure like any other, counted for its backoff.
      const reason = error instanceof Error ? error.message : String(error);
      const failed: ReplicaStatus = { id: spec.id, model: spec.model, profile: spec.profile, engine: spec.engine, cards: spec.cards, state: "failed", reason, since: this.iso() };
      await updateReplica(this.store.db, spec.id, { status: failed, updated_at: this.iso() });
      throw error;
    }
    // A heartbeat may have reported it already; only a row still pending takes the answer.
    const row = await findReplica(this.store.db, spec.id);
    if (row?.pending) await updateReplica(this.store.db, spec.id, { status, updated_at: this.iso() });
  }

  /**
   * Refuses a node that must get nothing new (lost, cordoned or draining),
   * the same rule placement applies, so a replica started by hand does not
   * land where the reconciler would never put one.
   */
  private async checkSchedulable(node: StoredNode, state: NodeState): Promise<void> {
    if (state === "lost") {
      throw new DomainError("agent_unreachable", `node ${node.name} is lost: not heard from since ${node.last_seen_at}`, "Start its agent again, or choose another node.");
    }
    const control = (await this.nodeControls()).get(node.name);
    if (control && (control.cordoned || control.draining)) {
      throw new DomainError(
        "node_cordoned",
        `node ${node.name} is ${control.draining ? "draining" : "cordoned"}: no new replicas are placed there`,
        `Choose another node, or \`llmgw ctl node uncordon ${node.name}\` first.`,
      );
    }
  }

  /** One node and what holds its resources, as placement's filters read it. */
  private async nodeSnapshot(node: StoredNode): Promise<Snapshot> {
    const models = new Map((await this.catalog.list()).map((model) => [model.name, model]));
    const held = (await listReplicas(this.store.db, { node: node.name })).filter((replica) => holdsCards(replica.state));
    const { inventory } = node;
    return {
      nodes: [
        {
          name: node.name,
          schedulable: true,
          engines: inventory.engines,
          cards: inventory.gpus.map(snapshotCard),
          memoryBytes: inventory.memory_bytes,
          cpuCores: inventory.cpu_cores,
        },
      ],
      replicas: held.map((replica) => heldReplica(replica, models)),
    };
  }

  /** Starts a catalog model's profile on a named node, on the cards given or the lowest free ones. */
  async startReplica(body: StartReplicaBody): Promise<ReplicaView> {
    const { model, profile } = await this.profileOf(body.model, body.profile);
    // Before any node is looked at: a secret the server lacks is the operator's to fix, whichever node is chosen.
    resolveSecretEnv(model.name, profile, process.env);
    const { node, address, state } = await this.agentOf(body.node);
    await this.checkSchedulable(node, state);
    const { inventory } = node;
    if (!inventory.engines.includes(profile.engine)) {
      throw new DomainError(
        "engine_missing",
        `engine ${profile.engine} is not installed on node ${node.name} (it has: ${inventory.engines.join(", ") || "none"})`,
        `Install ${profile.engine} there, or choose a node whose engines include it (\`llmgw ctl nodes\`).`,
      );
    }
    checkNodeHasCards(node.name, inventory, profile, model.name);
    const cardOwner = cardOwners(await listReplicaHoldings(this.store.db, { node: node.name }));
    const used = new Set(cardOwner.keys());
    const free = inventory.gpus.filter((gpu) => !used.has(gpu.index)).map((gpu) => `${gpu.index} (${gpu.class})`);
    const cards = body.cards ?? chooseCards(inventory.gpus, used, profile.gpus, profile.gpu_class);
    if (cards === undefined) {
      throw new DomainError(
        "cards_busy",
        `node ${node.name} has no ${profile.gpus} free card${profile.gpus === 1 ? "" : "s"}${profile.gpu_class ? ` of class ${profile.gpu_class}` : ""} for ${model.name}/${profile.name}; free: ${free.join(", ") || "none"}`,
        "Stop a replica on that node, or choose another node.",
      );
    }
    if (body.cards !== undefined) checkHandPickedCards(body.cards, { node: node.name, inventory, profile, model: model.name, cardOwner, free });
    // Then placement's own filters (host memory and cores, alike cards on one fabric), so a replica
    // started by hand cannot land where the reconciler would refuse to put one.
    const check = checkNode(await this.nodeSnapshot(node), demandProfile(profile, undefined), node.name, {
      cards,
      gpuMemoryUtilization: this.settings.gpuMemoryUtilization,
    });
    if (!check.fits) {
      throw new DomainError("does_not_fit", `${model.name}/${profile.name} does not fit on node ${node.name}: ${check.reason}`, "Choose another node or other cards, or stop a replica there first (`llmgw ctl nodes` shows what runs where).");
    }
    const id = body.id ?? this.newReplicaId(model.name);
    const existing = await findReplica(this.store.db, id);
    if (existing) {
      // Before the agent is asked: recording the new one would move the existing row to this node.
      throw new DomainError(
        "replica_conflict",
        `replica ${id} already exists on node ${existing.node} (${existing.model}/${existing.profile}, ${existing.state})`,
        `Give the new replica another --id, or stop that one first (\`llmgw ctl replica stop ${id}\`; that also clears a failed one).`,
      );
    }
    await this.launch(address, this.replicaSpec(id, model, profile, cards, body), profile, false);
    return await this.getReplica(id);
  }

  /**
   * Starts a replica where placement put it (the reconciler's start). Answers
   * its id once recorded and sent; an agent's refusal leaves the row failed,
   * with the reason, for the reconciler's backoff.
   */
  async startPlaced(
    placement: { model: string; profile: string; node: string; cards: readonly number[]; canary?: { readonly revision: string } },
    simulation?: StartReplicaBody["simulation"],
  ): Promise<string> {
    const { model, profile } = await this.profileOf(placement.model, placement.profile, placement.canary?.revision);
    const { address } = await this.agentOf(placement.node);
    const id = this.newReplicaId(model.name);
    await this.launch(address, this.replicaSpec(id, model, profile, placement.cards, simulation ? { simulation } : {}), profile, true, placement.canary ? "canary" : null);
    return id;
  }

  /** Sends a recorded start again (a crash came between recording it and the agent's answer). */
  async resumeStart(id: string): Promise<void> {
    const row = await findReplica(this.store.db, id);
    if (!row?.pending || row.spec === null) return;
    // A canary replica is sent again at its canary's revision, not the stable one.
    const intent = (await listReplicaIntents(this.store.db)).find((candidate) => candidate.id === id);
    const canary = intent?.arm === "canary" ? await findCanary(this.store.db, row.model) : undefined;
    const { model, profile } = await this.profileOf(row.model, row.profile, canary?.revision);
    // The stored spec holds secret_env's variable names; the values are read again from the server's environment.
    const spec = buildReplicaSpec({
      id,
      model,
      profile,
      cards: row.spec.cards,
      context: row.spec.context,
      gpuMemoryUtilization: row.spec.gpu_memory_utilization,
      simulation: row.spec.simulation,
      serverEnvironment: process.env,
      apiKey: row.spec.api_key,
      mirror: this.settings.mirror,
    });
    const { address } = await this.agentOf(row.node);
    await this.sendStart(address, spec, true);
  }

  /** Stops a replica (draining first with `drain`), or clears a failed one. */
  async stopReplica(id: string, drain: boolean): Promise<ReplicaView> {
    const row = await findReplica(this.store.db, id);
    if (!row) throw this.replicaNotFound(id);
    const { address, state } = await this.agentOf(row.node);
    const at = this.iso();
    if (state === "lost") {
      if (!holdsCards(row.state)) {
        // Failed or stopped: nothing runs, and nothing needs telling.
        await deleteReplica(this.store.db, id);
        return { ...(await this.viewOf(row)), state: row.state, endpoint: null };
      }
      // Its agent cannot be told now. The row is kept with the stop marked: deleting it let a returning
      // node report the engine again as a ready replica nobody asked for. The first heartbeat that
      // reports it sends the stop (see heartbeat); one that no longer reports it clears the row.
      await updateReplica(this.store.db, id, { stop_requested: true, updated_at: at });
      return await this.getReplica(id);
    }
    let status: ReplicaStatus;
    try {
      status = await stopReplicaOnAgent(address, id, drain);
    } catch (error) {
      if (error instanceof DomainError && error.code === "replica_not_found") {
        // The agent has forgotten it already (reported stopped or failed): nothing runs.
        await deleteReplica(this.store.db, id);
        return { ...(await this.viewOf(row)), state: "stopped", endpoint: null };
      }
      throw error;
    }
    if (!holdsCards(status.state)) {
      await deleteReplica(this.store.db, id);
      return { ...(await this.viewOf(row)), state: status.state, endpoint: null };
    }
    await updateReplica(this.store.db, id, { status, stop_requested: true, updated_at: at });
    return await this.getReplica(id);
  }

  private async viewOf(row: StoredReplica): Promise<ReplicaView> {
    return replicaView(row, await findNode(this.store.db, row.node), undefined);
  }

  async replicaLogs(id: string, tail: number, follow: boolean, signal?: AbortSignal): Promise<Readable> {
    const row = await findReplica(this.store.db, id);
    if (!row) throw this.replicaNotFound(id);
    const { address } = await this.agentOf(row.node);
    return await replicaLogsFromAgent(address, id, tail, follow, signal);
  }
}

function groupByNode<Replica extends { readonly node: string }>(replicas: readonly Replica[]): Map<string, Replica[]> {
  const byNode = new Map<string, Replica[]>();
  for (const replica of replicas) {
    const list = byNode.get(replica.node);
    if (list) list.push(replica);
    else byNode.set(replica.node, [replica]);
  }
  return byNode;
}
