import { randomBytes, randomUUID } from "node:crypto";
import type { Readable } from "node:stream";
import { z } from "zod";
import { resolveSecretEnv } from "../catalog/secret-env.js";
import {
  heartbeatRequestSchema,
  joinRequestSchema,
  protocolRefusal,
  protocolVersion,
  replicaIdSchema,
  type HeartbeatResponse,
  type Inventory,
  type JoinResponse,
  type ReplicaSpec,
  type ReplicaStatus,
} from "../protocol/agent-protocol.js";
import { bearerToken } from "../auth/bearer-token.js";
import { hashToken, newToken, sameSecret } from "../auth/tokens.js";
import type { NodeView, ReplicaCounts, ReplicaView } from "../protocol/views.js";
import { parseWithSchema } from "../catalog/schema-errors.js";
import { DomainError } from "../errors/domain-error.js";
import { chooseCards } from "../fleet/choose-cards.js";
import { nodeState, type NodeState } from "../fleet/node-state.js";
import type { InventoryNode } from "../fleet/pools.js";
import { holdsCards } from "../fleet/replica-life.js";
import { buildReplicaSpec, storableReplicaSpec } from "../fleet/replica-spec.js";
import {
  deleteReplica,
  findNode,
  findReplica,
  insertJoinToken,
  joinTokenExists,
  listNodes,
  listNodeTimes,
  listReplicaHoldings,
  listReplicas,
  oldestLastSeen,
  touchNode,
  updateReplica,
  upsertNode,
  upsertReplica,
  type StoredNode,
  type StoredReplica,
} from "../store/fleet-rows.js";
import type { Store } from "../store/open-store.js";
import { deleteReplicaIntent, insertReplicaIntent, listNodeControls, listReplicaIntents } from "../store/reconcile-rows.js";
import { loadAdapterOnAgent, replicaLogsFromAgent, startReplicaOnAgent, stopReplicaOnAgent, unloadAdapterOnAgent, type AgentAddress } from "./agent-client.js";
import type { CatalogService } from "./catalog-service.js";
import { cardOwners, nodeView, replicaCountsOf, replicaView, replicaViewState, type NodeControl, type ReplicaIntentView } from "./fleet-views.js";
import { resolveModel, type CatalogModel, type ResolvedProfile } from "../catalog/catalog-model.js";
import { entryAtRevision } from "../catalog/entry-at-revision.js";
import { findCanary } from "../store/canary-rows.js";
import { checkNode, demandProfile, type Snapshot } from "../placement/index.js";
import { heldReplica } from "./held-replica.js";
import { heartbeatDiff } from "./heartbeat-diff.js";
import { deriveControlSecret } from "../auth/control-secret.js";

export interface FleetSettings {
  readonly heartbeatDeadlineMs: number;
  readonly settlingWindowMs: number;
  /** Told to agents at join. */
  readonly heartbeatIntervalMs: number;
  readonly gpuMemoryUtilization: number;
  /**
   * The key control secrets are derived from (server/server-key.ts). Left out
   * (tests, a one-off in-process server), a key made for this process: agents
   * then learn the new control secret at their next heartbeat.
   */
  readonly serverKey?: Buffer | undefined;
  /** server.yaml's `mirror`: agents are sent `mirror:path` sources resolved against it. */
  readonly mirror?: string | undefined;
}

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

/** Where the fleet service logs what no caller is told (fastify's request.log in the API). */
export interface FleetLog {
  info(facts: Record<string, unknown>, message: string): void;
  warn(facts: Record<string, unknown>, message: string): void;
}

const silentLog: FleetLog = { info: () => undefined, warn: () => undefined };

/** A replica the agent stopped reporting is failed only after this long: a heartbeat built before its start may still arrive. */
const missingGraceMs = 10_000;

/**
 * A node that lacks the cards altogether (another class, or fewer in all) is
 * told apart from one whose cards are busy: "stop a replica on that node"
 * sends someone to stop work that could never make room.
 */
function checkNodeHasCards(node: string, inventory: Inventory, profile: { name: string; gpus: number; gpu_class: string | undefined }, model: string): void {
  const matching = inventory.gpus.filter((gpu) => profile.gpu_class === undefined || gpu.class === profile.gpu_class).length;
  if (matching >= profile.gpus) return;
  const counts = new Map<string, number>();
  for (const gpu of inventory.gpus) counts.set(gpu.class, (counts.get(gpu.class) ?? 0) + 1);
  const has = [...counts].map(([gpuClass, count]) => `${count}× ${gpuClass}`).join(", ") || "no GPU cards";
  const kind = profile.gpu_class === undefined ? "" : ` ${profile.gpu_class}`;
  const wanted = `${profile.gpus}${kind} card${profile.gpus === 1 ? "" : "s"}`;
  throw new DomainError(
    "cards_missing",
    matching === 0
      ? `node ${node} has no${kind} cards (it has ${has}); ${model}/${profile.name} needs ${wanted}`
      : `node ${node} has only ${matching}${kind} card${matching === 1 ? "" : "s"} in all (it has ${has}); ${model}/${profile.name} needs ${wanted}`,
    `Choose a node with ${wanted} (\`llmgw ctl nodes\` lists each node's cards), or a profile of ${model} for the cards this node has.`,
  );
}

/**
 * Cards named by hand get the checks chooseCards makes by construction: a
 * repeated card, a wrong count or class, or a card in use would reach the
 * agent and start an engine that cannot load, or two on one card.
 */
function checkHandPickedCards(
  cards: readonly number[],
  context: { node: string; inventory: Inventory; profile: { name: string; gpus: number; gpu_class: string | undefined }; model: string; cardOwner: ReadonlyMap<number, string>; free: readonly string[] },
): void {
  const { node, inventory, profile, model, cardOwner, free } = context;
  const what = `${model}/${profile.name}`;
  const unknownCards = cards.filter((card) => !inventory.gpus.some((gpu) => gpu.index === card));
  if (unknownCards.length > 0) {
    throw new DomainError("invalid_input", `node ${node} has no card ${unknownCards.join(", ")}`, `Its cards: ${inventory.gpus.map((gpu) => gpu.index).join(", ") || "none"}.`);
  }
  const repeated = cards.find((card, position) => cards.indexOf(card) !== position);
  if (repeated !== undefined) {
    throw new DomainError("invalid_input", `cards ${cards.join(",")}: card ${repeated} is named twice`, "Name each card once.");
  }
  if (cards.length !== profile.gpus) {
    throw new DomainError(
      "invalid_input",
      `${what} needs ${profile.gpus} card${profile.gpus === 1 ? "" : "s"}; ${cards.length} given (${cards.join(",") || "none"})`,
      `Name ${profile.gpus} cards, or leave --cards out and the lowest free ones are taken.`,
    );
  }
  for (const card of cards) {
    const gpuClass = inventory.gpus.find((gpu) => gpu.index === card)?.class;
    if (profile.gpu_class !== undefined && gpuClass !== profile.gpu_class) {
      throw new DomainError(
        "invalid_input",
        `card ${card} on node ${node} is a ${gpuClass ?? "?"}, but ${what} needs ${profile.gpu_class}`,
        `Choose cards of class ${profile.gpu_class} (free: ${free.join(", ") || "none"}), or another profile.`,
      );
    }
    const owner = cardOwner.get(card);
    if (owner !== undefined) {
      throw new DomainError("cards_busy", `card ${card} on node ${node} is used by replica ${owner}`, `Choose free cards (free: ${free.join(", ") || "none"}), or stop ${owner} first.`);
    }
  }
}

/** Refuses a message naming another protocol version; one without a version is refused by its schema, as any malformed body. */
function refuseOtherProtocol(body: unknown): void {
  const refusal = protocolRefusal(body, {
    side: "server",
    place: "llmgw server",
    hint: "Run an agent of the server's llmgw release (npm install -g llmgw@<server version>) and start it again.",
  });
  if (refusal) throw refusal;
}

/**
 * The node a heartbeat's credential belongs to. An unknown name and a wrong
 * credential get the same answer, so a caller without a credential cannot
 * learn which node names exist. Compared by hash, since only the hash is
 * stored: a stolen row presented as a token does not authenticate.
 */
async function authenticatedNode(store: Store, name: string, authorization: string | undefined): Promise<StoredNode> {
  const node = await findNode(store.db, name);
  const given = bearerToken(authorization) ?? "";
  if (!node || given === "" || !sameSecret(hashToken(given), node.credential_hash)) {
    throw new DomainError("unauthorized", `node ${name}: no joined node of that name holds this credential`, "The agent joins again with its join token.");
  }
  return node;
}

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
  }

  /** What the server presents to the node's agent; see server/control-secret.ts. */
  private controlSecretOf(node: Pick<StoredNode, "credential_hash">): string {
    return deriveControlSecret(this.serverKey, node.credential_hash);
  }

  private iso(): string {
    return new Date(this.now()).toISOString();
  }

  async createJoinToken(createdBy: string): Promise<{ token: string; created_at: string }> {
    const token = newToken("join");
    const created_at = this.iso();
    await insertJoinToken(this.store.db, { id: randomUUID(), token_hash: hashToken(token), created_at, created_by: createdBy });
    return { token, created_at };
  }

  async join(body: unknown): Promise<JoinResponse> {
    refuseOtherProtocol(body);
    const request = parseWithSchema(joinRequestSchema, body ?? {}, { label: "join request" });
    if (!(await joinTokenExists(this.store.db, hashToken(request.join_token)))) {
      throw new DomainError(
        "join_refused",
        `node ${request.name}: the join token is not one this server issued`,
        "Get a join token with `llmgw ctl node token` on the server and start the agent with --token.",
      );
    }
    const existing = await findNode(this.store.db, request.name);
    if (existing) {
      // A join under a live node's name would take over its credential, and the two agents would then
      // take the name back from each other at every beat. This holds for the same host too: a
      // restarting agent keeps its credential and does not join, so a live name joined from the same
      // host is a second agent there (--name defaults to the host name), not a restart.
      const silentMs = this.now() - Date.parse(existing.last_seen_at);
      if (silentMs < this.settings.heartbeatDeadlineMs) {
        throw new DomainError(
          "name_taken",
          `node name ${request.name} is taken by the agent at ${existing.address}, heard from ${Math.round(silentMs / 1000)} s ago; the agent at ${request.address} cannot join under it`,
          `Give this agent its own --name. If it replaces that machine, it joins once the old agent has been silent for ${Math.round(this.settings.heartbeatDeadlineMs / 1000)} s.`,
        );
      }
    }
    const credential = newToken("node");
    const credentialHash = hashToken(credential);
    const at = this.iso();
    await upsertNode(this.store.db, {
      name: request.name,
      address: request.address,
      fabric: request.fabric,
      labels: request.labels,
      inventory: request.inventory,
      credential_hash: credentialHash,
      joined_at: at,
      last_seen_at: at,
    });
    return {
      protocol: protocolVersion,
      node: request.name,
      credential,
      control_secret: this.controlSecretOf({ credential_hash: credentialHash }),
      heartbeat_interval_ms: this.settings.heartbeatIntervalMs,
    };
  }

  /** `log` gets what the agent is not told: a replica id it reports that belongs to another node, a pending stop that failed. */
  async heartbeat(authorization: string | undefined, body: unknown, log: FleetLog = silentLog): Promise<HeartbeatResponse> {
    refuseOtherProtocol(body);
    const beat = parseWithSchema(heartbeatRequestSchema, body ?? {}, { label: "heartbeat" });
    const node = await authenticatedNode(this.store, beat.name, authorization);
    await touchNode(this.store.db, beat.name, { address: beat.address, last_seen_at: this.iso(), inventory: beat.inventory });
    const writes = heartbeatDiff({
      node: beat.name,
      reported: beat.replicas,
      stored: await listReplicas(this.store.db, { node: beat.name }),
      nowMs: this.now(),
      missingGraceMs,
    });
    for (const write of writes.upserts) {
      if (await upsertReplica(this.store.db, write)) continue;
      // Replica ids are unique across the fleet (startReplica refuses a taken one), so this is an
      // agent whose state file came from another node. Recording it here would move the row to
      // this node and back at every beat of each; the first node keeps it.
      const owner = await findReplica(this.store.db, write.id);
      log.warn({ replica: write.id, node: beat.name, recorded_on: owner?.node }, "replica-conflict-ignored");
    }
    for (const id of writes.deletes) await deleteReplica(this.store.db, id);
    for (const failure of writes.failures) await updateReplica(this.store.db, failure.id, { status: failure.status, updated_at: failure.status.since });
    const controlSecret = this.controlSecretOf(node);
    for (const id of writes.stopsToSend) this.stopOnReturn({ name: node.name, address: beat.address, controlSecret }, id, log);
    // An agent upgraded in place, or one whose server key was restored, learns the secret it should expect.
    return { protocol: protocolVersion, ...(beat.control_secret_hash !== hashToken(controlSecret) ? { control_secret: controlSecret } : {}) };
  }

  /** Stops being sent to returning agents; one per replica at a time, so beats during the call do not repeat it. */
  private readonly stopsInFlight = new Set<string>();

  /**
   * Asks the agent to stop a replica after the heartbeat is answered: the
   * agent's heartbeat must not wait on the server calling it back (an agent
   * the server cannot reach would see every beat time out).
   */
  private stopOnReturn(address: AgentAddress, id: string, log: FleetLog): void {
    if (this.stopsInFlight.has(id)) return;
    this.stopsInFlight.add(id);
    void stopReplicaOnAgent(address, id, false)
      .then(
        () => log.info({ replica: id, node: address.name }, "replica-stop-delivered"),
        (error: unknown) => log.warn({ replica: id, node: address.name, error: (error as Error).message }, "replica-stop-undelivered"),
      )
      .finally(() => this.stopsInFlight.delete(id));
  }

  /** Whether every node has reported since this server started (which closes the settling window early). */
  private everyNodeReportedSince(oldest: string | undefined): boolean {
    return oldest === undefined || Date.parse(oldest) >= this.startedAtMs;
  }

  private stateOf(node: Pick<StoredNode, "last_seen_at">, everyNodeReportedSinceStart: boolean): NodeState {
    return nodeState({
      lastSeenMs: Date.parse(node.last_seen_at),
      nowMs: this.now(),
      heartbeatDeadlineMs: this.settings.heartbeatDeadlineMs,
      serverStartedMs: this.startedAtMs,
      settlingWindowMs: this.settings.settlingWindowMs,
      everyNodeReportedSinceStart,
    });
  }

  private nodeStates(nodes: readonly Pick<StoredNode, "name" | "last_seen_at">[]): Map<string, NodeState> {
    const everyNodeReported = nodes.every((node) => Date.parse(node.last_seen_at) >= this.startedAtMs);
    return new Map(nodes.map((node) => [node.name, this.stateOf(node, everyNodeReported)]));
  }

  /** One node's state, read with one row and one aggregate rather than the whole fleet. */
  private async nodeStateByKey(node: StoredNode): Promise<NodeState> {
    return this.stateOf(node, this.everyNodeReportedSince(await oldestLastSeen(this.store.db)));
  }

  async listNodes(): Promise<NodeView[]> {
    const [nodes, replicas, controls] = await Promise.all([listNodes(this.store.db), listReplicaHoldings(this.store.db), this.nodeControls()]);
    const states = this.nodeStates(nodes);
    const byNode = groupByNode(replicas);
    return nodes.map((node) => nodeView(node, states.get(node.name) ?? "lost", byNode.get(node.name) ?? [], controls.get(node.name)));
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
      gpus: node.gpus.map((gpu) => ({ index: gpu.index, class: gpu.class, memoryBytes: gpu.memory_bytes, fabric: gpu.fabric, free: gpu.replica === null })),
      memoryBytes: node.memory_bytes,
      cpuCores: node.cpu_cores,
    }));

  async getNode(name: string): Promise<NodeView> {
    const node = await findNode(this.store.db, name);
    if (!node) throw this.nodeNotFound(name);
    const [state, replicas, controls] = await Promise.all([this.nodeStateByKey(node), listReplicaHoldings(this.store.db, { node: name }), this.nodeControls()]);
    return nodeView(node, state, replicas, controls.get(name));
  }

  private nodeNotFound(name: string): DomainError {
    return new DomainError("node_not_found", `no node named ${name} has joined this server`, "List nodes with `llmgw ctl nodes`; a new node joins with `llmgw agent --token` (token from `llmgw ctl node token`).");
  }

  async listReplicas(filter: { model?: string | undefined; node?: string | undefined } = {}): Promise<ReplicaView[]> {
    const [nodes, replicas, intents] = await Promise.all([listNodes(this.store.db), listReplicas(this.store.db, filter), this.replicaIntents()]);
    const states = this.nodeStates(nodes);
    const byName = new Map(nodes.map((node) => [node.name, node]));
    return replicas.map((row) => replicaView(row, byName.get(row.node), states.get(row.node), intents.get(row.id)));
  }

  async getReplica(id: string): Promise<ReplicaView> {
    const row = await findReplica(this.store.db, id);
    if (!row) throw this.replicaNotFound(id);
    const [node, intents] = await Promise.all([findNode(this.store.db, row.node), this.replicaIntents()]);
    return replicaView(row, node, node === undefined ? undefined : await this.nodeStateByKey(node), intents.get(id));
  }

  private replicaNotFound(id: string): DomainError {
    return new DomainError("replica_not_found", `no replica ${id} on this server`, "List replicas with `llmgw ctl replicas`.");
  }

  /**
   * Ready and draining replicas with the key each engine expects, for the
   * routing table (never for an API answer: the views leave the key out).
   */
  async routingReplicas(): Promise<(ReplicaView & { api_key: string | undefined })[]> {
    const [nodes, replicas, intents] = await Promise.all([listNodes(this.store.db), listReplicas(this.store.db), this.replicaIntents()]);
    const states = this.nodeStates(nodes);
    const byName = new Map(nodes.map((node) => [node.name, node]));
    return replicas.flatMap((row) => {
      // A withdrawn replica shows no endpoint: traffic leaves it before its engine is told to drain.
      const view = replicaView(row, byName.get(row.node), states.get(row.node), intents.get(row.id));
      if ((view.state !== "ready" && view.state !== "draining") || view.endpoint === null) return [];
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
    const states = this.nodeStates(nodes);
    const byName = new Map(nodes.map((node) => [node.name, node]));
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
    const [nodes, replicas] = await Promise.all([listNodeTimes(this.store.db), listReplicaHoldings(this.store.db)]);
    const states = this.nodeStates(nodes);
    return replicaCountsOf(replicas.map((row) => ({ model: row.model, state: replicaViewState(row, states.get(row.node)) })));
  };

  /** How to call a node's agent (its control URL and the control secret it checks). */
  async agentAddress(nodeName: string): Promise<AgentAddress> {
    return (await this.agentOf(nodeName)).address;
  }

  private async agentOf(nodeName: string): Promise<{ node: StoredNode; address: AgentAddress; state: NodeState }> {
    const node = await findNode(this.store.db, nodeName);
    if (!node) throw this.nodeNotFound(nodeName);
    const state = await this.nodeStateByKey(node);
    return { node, address: { name: node.name, address: node.address, controlSecret: this.controlSecretOf(node) }, state };
  }

  /** The model's profile, at `revision` when given (a canary's replicas run the model at another revision). */
  private async profileOf(modelName: string, profileName: string | undefined, revision?: string): Promise<{ model: CatalogModel; profile: ResolvedProfile }> {
    const inForce = await this.catalog.get(modelName);
    const model = revision === undefined || inForce.entry.external ? inForce : resolveModel(entryAtRevision(inForce.entry, revision), inForce.source);
    if (model.entry.external) {
      throw new DomainError("invalid_profile", `${model.name} is an external model: it runs at its provider, not on a node`, "Start a model that has profiles.");
    }
    const profile = profileName === undefined ? model.profiles[0] : model.profiles.find((candidate) => candidate.name === profileName);
    if (!profile) {
      throw new DomainError(
        "profile_not_found",
        `model ${model.name} has no profile ${profileName ?? "(none at all)"}`,
        `Its profiles: ${model.profiles.map((candidate) => candidate.name).join(", ") || "none"}.`,
      );
    }
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
          cards: inventory.gpus.map((gpu) => ({ index: gpu.index, gpuClass: gpu.class, memoryBytes: gpu.memory_bytes, fabric: gpu.fabric })),
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
