import { randomBytes, randomUUID } from "node:crypto";
import type { Readable } from "node:stream";
import { z } from "zod";
import {
  heartbeatRequestSchema,
  inventorySchema,
  joinRequestSchema,
  protocolOf,
  protocolVersion,
  replicaIdSchema,
  replicaSpecSchema,
  replicaStatusSchema,
  terminalReplicaStates,
  versionMismatchMessage,
  type HeartbeatResponse,
  type Inventory,
  type JoinResponse,
  type ReplicaSpec,
  type ReplicaState,
  type ReplicaStatus,
} from "../protocol/agent-protocol.js";
import { hashToken, newToken, sameSecret } from "../api/tokens.js";
import type { ReplicaCountSource } from "../api/model-view.js";
import type { NodeView, ReplicaCounts, ReplicaView } from "../protocol/views.js";
import { parseBody } from "../api/parse-body.js";
import { DomainError } from "../errors/domain-error.js";
import { chooseCards } from "../fleet/choose-cards.js";
import { nodeState, type NodeState } from "../fleet/node-state.js";
import type { InventoryNode } from "../fleet/pools.js";
import {
  deleteReplica,
  findNode,
  findReplica,
  insertJoinToken,
  joinTokenExists,
  listNodes,
  listReplicas,
  touchNode,
  updateReplica,
  upsertNode,
  upsertReplica,
  type NodeRow,
  type ReplicaRow,
} from "../store/fleet-rows.js";
import type { Store } from "../store/open-store.js";
import { deleteReplicaIntent, insertReplicaIntent, listNodeControls, listReplicaIntents, type ReplicaIntentRow } from "../store/reconcile-rows.js";
import { replicaLogsFromAgent, startReplicaOnAgent, stopReplicaOnAgent, type AgentAddress } from "./agent-client.js";
import type { CatalogService } from "./catalog-service.js";
import type { CatalogModel, ResolvedProfile } from "../catalog/catalog-model.js";
import { checkNode, demandProfile, type Snapshot } from "../placement/index.js";

export interface FleetSettings {
  readonly heartbeatDeadlineMs: number;
  readonly settlingWindowMs: number;
  /** Told to agents at join. */
  readonly heartbeatIntervalMs: number;
  readonly gpuMemoryUtilization: number;
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

function versionRefusal(body: unknown): DomainError | undefined {
  const theirs = protocolOf(body);
  if (theirs === protocolVersion) return undefined;
  return new DomainError(
    "version_unsupported",
    versionMismatchMessage("server", theirs, "llmgw server"),
    "Run an agent of the server's llmgw release (npm install -g llmgw@<server version>) and start it again.",
  );
}

/**
 * The server's side of the fleet (SPEC S3): join tokens, joins and
 * heartbeats, the node registry, and replicas started and stopped by hand on
 * a named node. The state of record for a replica is what its agent last
 * reported; the server adds what only it knows (the spec it sent, a stop it
 * asked for) and whether the node is still heard from.
 */
export class FleetService {
  readonly startedAtMs: number;

  constructor(
    private readonly store: Store,
    private readonly catalog: CatalogService,
    private readonly settings: FleetSettings,
    private readonly now: () => number = Date.now,
  ) {
    this.startedAtMs = now();
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
    const refusal = versionRefusal(body);
    if (refusal) throw refusal;
    const request = parseBody(joinRequestSchema, body);
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
    const at = this.iso();
    await upsertNode(this.store.db, {
      name: request.name,
      address: request.address,
      fabric: request.fabric,
      labels: JSON.stringify(request.labels),
      inventory: JSON.stringify(request.inventory),
      credential,
      joined_at: at,
      last_seen_at: at,
    });
    return { protocol: protocolVersion, node: request.name, credential, heartbeat_interval_ms: this.settings.heartbeatIntervalMs };
  }

  /** `log` gets what the agent is not told: a replica id it reports that belongs to another node, a pending stop that failed. */
  async heartbeat(authorization: string | undefined, body: unknown, log: FleetLog = silentLog): Promise<HeartbeatResponse> {
    const refusal = versionRefusal(body);
    if (refusal) throw refusal;
    const beat = parseBody(heartbeatRequestSchema, body);
    const node = await findNode(this.store.db, beat.name);
    if (!node) {
      throw new DomainError("node_not_found", `no node ${beat.name} has joined this server`, "The agent joins again with its join token.");
    }
    const given = /^Bearer\s+(\S+)$/i.exec(authorization ?? "")?.[1] ?? "";
    if (!sameSecret(given, node.credential)) {
      throw new DomainError("unauthorized", `node ${beat.name}: the credential is not the one this server issued`, "The agent joins again with its join token.");
    }
    const at = this.iso();
    await touchNode(this.store.db, beat.name, { address: beat.address, last_seen_at: at, ...(beat.inventory ? { inventory: JSON.stringify(beat.inventory) } : {}) });
    const known = await listReplicas(this.store.db, { node: beat.name });
    const reported = new Set<string>();
    for (const status of beat.replicas) {
      reported.add(status.id);
      const row = known.find((candidate) => candidate.id === status.id);
      // A stop the server asked for is finished: the row has done its job.
      if (status.state === "stopped") {
        if (row) await deleteReplica(this.store.db, status.id);
        continue;
      }
      const recorded = await upsertReplica(this.store.db, {
        id: status.id,
        node: beat.name,
        model: status.model,
        profile: status.profile,
        engine: status.engine,
        cards: JSON.stringify(status.cards),
        spec: null,
        state: status.state,
        status: JSON.stringify(status),
        stop_requested: row?.stop_requested ?? 0,
        created_at: row?.created_at ?? at,
        updated_at: at,
      });
      if (!recorded) {
        // Replica ids are unique across the fleet (startReplica refuses a taken one), so this is an
        // agent whose state file came from another node. Recording it here would move the row to
        // this node and back at every beat of each; the first node keeps it.
        const owner = await findReplica(this.store.db, status.id);
        log.warn({ replica: status.id, node: beat.name, recorded_on: owner?.node }, "replica-conflict-ignored");
        continue;
      }
      if (row?.stop_requested && status.state !== "draining") {
        // Stopped while the node was lost: its agent was never told. Now it can be.
        this.stopOnReturn({ name: node.name, address: beat.address, credential: node.credential }, status.id, log);
      }
    }
    for (const row of known) {
      if (reported.has(row.id) || terminalReplicaStates.includes(row.state as ReplicaState)) continue;
      if (this.now() - Date.parse(row.created_at) < missingGraceMs) continue;
      if (row.stop_requested) {
        await deleteReplica(this.store.db, row.id);
        continue;
      }
      const status = { ...this.storedStatus(row), state: "failed" as const, reason: `the agent on node ${beat.name} no longer reports this replica (its state file was lost or replaced)`, since: at };
      await updateReplica(this.store.db, row.id, { state: "failed", status: JSON.stringify(status), updated_at: at });
    }
    return { protocol: protocolVersion };
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

  private storedStatus(row: ReplicaRow): ReplicaStatus {
    const parsed = replicaStatusSchema.safeParse(JSON.parse(row.status));
    if (parsed.success) return parsed.data;
    return {
      id: row.id,
      model: row.model,
      profile: row.profile,
      engine: row.engine as ReplicaStatus["engine"],
      cards: JSON.parse(row.cards) as number[],
      state: row.state as ReplicaState,
      since: row.updated_at,
    };
  }

  private nodeStates(nodes: readonly NodeRow[]): Map<string, NodeState> {
    const now = this.now();
    const everyNodeReportedSinceStart = nodes.every((node) => Date.parse(node.last_seen_at) >= this.startedAtMs);
    return new Map(
      nodes.map((node) => [
        node.name,
        nodeState({
          lastSeenMs: Date.parse(node.last_seen_at),
          nowMs: now,
          heartbeatDeadlineMs: this.settings.heartbeatDeadlineMs,
          serverStartedMs: this.startedAtMs,
          settlingWindowMs: this.settings.settlingWindowMs,
          everyNodeReportedSinceStart,
        }),
      ]),
    );
  }

  private inventoryOf(node: NodeRow): Inventory {
    return inventorySchema.parse(JSON.parse(node.inventory));
  }

  private replicaView(row: ReplicaRow, node: NodeRow | undefined, state: NodeState | undefined, intent?: ReplicaIntentRow): ReplicaView {
    const status = this.storedStatus(row);
    const terminal = terminalReplicaStates.includes(status.state);
    if (intent?.withdrawn_at && !terminal) {
      // Out of routing from the moment it is withdrawn, before its engine hears of it: a client
      // reading this list stops sending to it while it still answers what it has.
      return { ...this.replicaView(row, node, state), state: "draining", endpoint: null, reason: intent.withdraw_reason };
    }
    if (row.state === "pending") {
      return { ...this.replicaView({ ...row, state: "fetching" }, node, state), state: "pending", endpoint: null, reason: null, progress: null };
    }
    // A stop asked for while the node was lost: the agent has not heard of it yet, whatever it last reported.
    const stopPending = row.stop_requested !== 0 && !terminal && status.state !== "draining";
    // The agent reports its engines on its own loopback; callers elsewhere reach them at the node's host.
    let endpoint = status.endpoint ?? null;
    if (endpoint && node) {
      const engineUrl = new URL(endpoint);
      engineUrl.hostname = new URL(node.address).hostname;
      endpoint = engineUrl.toString().replace(/\/$/, "");
    }
    return {
      id: row.id,
      model: row.model,
      profile: row.profile,
      node: row.node,
      engine: row.engine,
      gpus: status.cards,
      state: stopPending ? "draining" : state === "lost" && !terminal ? "lost" : status.state,
      endpoint: terminal || stopPending ? null : endpoint,
      progress: status.progress ?? null,
      reason: stopPending
        ? `stopped while node ${row.node} was lost (not heard from since ${node?.last_seen_at ?? "?"}); its agent is told to stop it when the node reports it again`
        : state === "lost" && !terminal
          ? `node ${row.node} has not been heard from since ${node?.last_seen_at ?? "?"}`
          : (status.reason ?? null),
      pid: status.pid ?? null,
      adopted: status.adopted ?? false,
      since: status.since,
      created_at: row.created_at,
    };
  }

  async listNodes(): Promise<NodeView[]> {
    const [nodes, replicas, controls] = await Promise.all([listNodes(this.store.db), listReplicas(this.store.db), listNodeControls(this.store.db)]);
    const states = this.nodeStates(nodes);
    return nodes.map((node) => {
      const inventory = this.inventoryOf(node);
      const onNode = replicas.filter((replica) => replica.node === node.name && !terminalReplicaStates.includes(replica.state as ReplicaState));
      const cardOwner = new Map<number, string>();
      for (const replica of onNode) for (const card of JSON.parse(replica.cards) as number[]) cardOwner.set(card, replica.id);
      return {
        name: node.name,
        state: states.get(node.name) ?? "lost",
        address: node.address,
        hostname: inventory.hostname,
        fabric: node.fabric,
        labels: JSON.parse(node.labels) as Record<string, string>,
        gpus: inventory.gpus.map((gpu) => ({
          index: gpu.index,
          uuid: gpu.uuid,
          name: gpu.name,
          class: gpu.class,
          memory_bytes: gpu.memory_bytes,
          memory_used_bytes: gpu.memory_used_bytes ?? null,
          fabric: gpu.fabric,
          replica: cardOwner.get(gpu.index) ?? null,
        })),
        memory_bytes: inventory.memory_bytes,
        cpu_cores: inventory.cpu_cores,
        engines: inventory.engines,
        disk_free_bytes: inventory.disk_free_bytes,
        simulated: inventory.simulated,
        joined_at: node.joined_at,
        last_seen_at: node.last_seen_at,
        replicas: onNode.map((replica) => replica.id),
        cordoned: controls.some((control) => control.node === node.name && (control.cordoned !== 0 || control.draining !== 0)),
        draining: controls.some((control) => control.node === node.name && control.draining !== 0),
      };
    });
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
    const node = (await this.listNodes()).find((candidate) => candidate.name === name);
    if (!node) throw this.nodeNotFound(name);
    return node;
  }

  private nodeNotFound(name: string): DomainError {
    return new DomainError("node_not_found", `no node named ${name} has joined this server`, "List nodes with `llmgw ctl nodes`; a new node joins with `llmgw agent --token` (token from `llmgw ctl node token`).");
  }

  async listReplicas(filter: { model?: string | undefined; node?: string | undefined } = {}): Promise<ReplicaView[]> {
    const [nodes, replicas, intents] = await Promise.all([listNodes(this.store.db), listReplicas(this.store.db, filter), listReplicaIntents(this.store.db)]);
    const states = this.nodeStates(nodes);
    const intentOf = new Map(intents.map((intent) => [intent.id, intent]));
    return replicas.map((row) => this.replicaView(row, nodes.find((node) => node.name === row.node), states.get(row.node), intentOf.get(row.id)));
  }

  async getReplica(id: string): Promise<ReplicaView> {
    const replica = (await this.listReplicas()).find((candidate) => candidate.id === id);
    if (!replica) throw this.replicaNotFound(id);
    return replica;
  }

  private replicaNotFound(id: string): DomainError {
    return new DomainError("replica_not_found", `no replica ${id} on this server`, "List replicas with `llmgw ctl replicas`.");
  }

  /** Ready and desired replicas per model, for the model views. */
  readonly replicaCounts: ReplicaCountSource = async () => {
    const counts = new Map<string, ReplicaCounts>();
    for (const replica of await this.listReplicas()) {
      const current = counts.get(replica.model) ?? { ready: 0, desired: 0 };
      const live = replica.state !== "failed" && replica.state !== "stopped" && replica.state !== "draining";
      counts.set(replica.model, { ready: current.ready + (replica.state === "ready" ? 1 : 0), desired: current.desired + (live ? 1 : 0) });
    }
    return counts;
  };

  private async agentOf(nodeName: string): Promise<{ node: NodeRow; address: AgentAddress; state: NodeState }> {
    const nodes = await listNodes(this.store.db);
    const node = nodes.find((candidate) => candidate.name === nodeName);
    if (!node) throw this.nodeNotFound(nodeName);
    const state = this.nodeStates(nodes).get(nodeName) ?? "lost";
    return { node, address: { name: node.name, address: node.address, credential: node.credential }, state };
  }

  private async profileOf(modelName: string, profileName: string | undefined): Promise<{ model: CatalogModel; profile: ResolvedProfile }> {
    const model = await this.catalog.get(modelName);
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

  private replicaSpec(id: string, model: CatalogModel, profile: ResolvedProfile, cards: readonly number[], extra: Pick<StartReplicaBody, "context" | "simulation">): ReplicaSpec {
    return {
      id,
      model: model.name,
      profile: profile.name,
      engine: profile.engine,
      source: profile.source,
      cards: [...cards],
      ...(extra.context ?? model.entry.context ? { context: extra.context ?? model.entry.context } : {}),
      slots: profile.slots,
      ...(profile.cpu_cores !== undefined ? { cpu_cores: profile.cpu_cores } : {}),
      ...(profile.quantization !== undefined ? { quantization: profile.quantization } : {}),
      gpu_memory_utilization: this.settings.gpuMemoryUtilization,
      args: [...profile.args],
      env: { ...profile.env },
      adapters: (model.entry.adapters ?? []).map((adapter) => ({ name: adapter.name, source: adapter.source, ...(adapter.scale !== undefined ? { scale: adapter.scale } : {}) })),
      ...(extra.simulation ? { simulation: extra.simulation } : {}),
    };
  }

  /**
   * Records the replica (state `pending`) before its agent is called, then
   * calls it. A crash in between leaves a row naming the node, cards and
   * spec, which the reconciler sends again (the agent answers a repeated
   * start with what runs), never an engine nobody knows of.
   */
  private async launch(address: AgentAddress, spec: ReplicaSpec, managed: boolean): Promise<void> {
    const at = this.iso();
    const pending: ReplicaStatus = { id: spec.id, model: spec.model, profile: spec.profile, engine: spec.engine, cards: spec.cards, state: "fetching", since: at };
    await upsertReplica(this.store.db, {
      id: spec.id,
      node: address.name,
      model: spec.model,
      profile: spec.profile,
      engine: spec.engine,
      cards: JSON.stringify(spec.cards),
      spec: JSON.stringify(spec),
      state: "pending",
      status: JSON.stringify(pending),
      stop_requested: 0,
      created_at: at,
      updated_at: at,
    });
    await insertReplicaIntent(this.store.db, { id: spec.id, model: spec.model, managed: managed ? 1 : 0, placed_at: at, withdrawn_at: null, withdraw_reason: null });
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
      await updateReplica(this.store.db, spec.id, { state: "failed", status: JSON.stringify(failed), updated_at: this.iso() });
      throw error;
    }
    // A heartbeat may have reported it already; only a row still pending takes the answer.
    const row = await findReplica(this.store.db, spec.id);
    if (row?.state === "pending") await updateReplica(this.store.db, spec.id, { state: status.state, status: JSON.stringify(status), updated_at: this.iso() });
  }

  /**
   * Refuses a node that must get nothing new (lost, settling, cordoned or
   * draining), the same rule placement applies, so a replica started by hand
   * does not land where the reconciler would never put one.
   */
  private async checkSchedulable(node: NodeRow, state: NodeState): Promise<void> {
    if (state === "lost") {
      throw new DomainError("agent_unreachable", `node ${node.name} is lost: not heard from since ${node.last_seen_at}`, "Start its agent again, or choose another node.");
    }
    const control = (await listNodeControls(this.store.db)).find((candidate) => candidate.node === node.name);
    if (control && (control.cordoned !== 0 || control.draining !== 0)) {
      throw new DomainError(
        "node_cordoned",
        `node ${node.name} is ${control.draining !== 0 ? "draining" : "cordoned"}: no new replicas are placed there`,
        `Choose another node, or \`llmgw ctl node uncordon ${node.name}\` first.`,
      );
    }
  }

  /** One node and what holds its resources, as placement's filters read it. */
  private async nodeSnapshot(node: NodeRow, inventory: Inventory): Promise<Snapshot> {
    const models = new Map((await this.catalog.list()).map((model) => [model.name, model]));
    const held = (await listReplicas(this.store.db, { node: node.name })).filter((replica) => !terminalReplicaStates.includes(replica.state as ReplicaState));
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
      replicas: held.map((replica) => {
        const model = models.get(replica.model);
        const profile = model?.profiles.find((candidate) => candidate.name === replica.profile);
        const needs = profile ? demandProfile(profile, undefined) : undefined;
        return {
          id: replica.id,
          model: replica.model,
          profile: replica.profile,
          node: replica.node,
          cards: JSON.parse(replica.cards) as number[],
          memoryBytes: needs?.memoryBytes ?? 0,
          cpuCores: needs?.cpuCores ?? 0,
          modelClass: model?.class ?? "opportunistic",
        };
      }),
    };
  }

  /** Starts a catalog model's profile on a named node, on the cards given or the lowest free ones. */
  async startReplica(body: StartReplicaBody): Promise<ReplicaView> {
    const { model, profile } = await this.profileOf(body.model, body.profile);
    const { node, address, state } = await this.agentOf(body.node);
    await this.checkSchedulable(node, state);
    const inventory = this.inventoryOf(node);
    if (!inventory.engines.includes(profile.engine)) {
      throw new DomainError(
        "engine_missing",
        `engine ${profile.engine} is not installed on node ${node.name} (it has: ${inventory.engines.join(", ") || "none"})`,
        `Install ${profile.engine} there, or choose a node whose engines include it (\`llmgw ctl nodes\`).`,
      );
    }
    const cardOwner = new Map<number, string>();
    for (const replica of await listReplicas(this.store.db, { node: node.name })) {
      if (!terminalReplicaStates.includes(replica.state as ReplicaState)) for (const card of JSON.parse(replica.cards) as number[]) cardOwner.set(card, replica.id);
    }
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
    const check = checkNode(await this.nodeSnapshot(node, inventory), demandProfile(profile, undefined), node.name, {
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
    await this.launch(address, this.replicaSpec(id, model, profile, cards, body), false);
    return await this.getReplica(id);
  }

  /**
   * Starts a replica where placement put it (the reconciler's start). Answers
   * its id once recorded and sent; an agent's refusal leaves the row failed,
   * with the reason, for the reconciler's backoff.
   */
  async startPlaced(placement: { model: string; profile: string; node: string; cards: readonly number[] }, simulation?: StartReplicaBody["simulation"]): Promise<string> {
    const { model, profile } = await this.profileOf(placement.model, placement.profile);
    const { address } = await this.agentOf(placement.node);
    const id = this.newReplicaId(model.name);
    await this.launch(address, this.replicaSpec(id, model, profile, placement.cards, simulation ? { simulation } : {}), true);
    return id;
  }

  /** Sends a recorded start again (a crash came between recording it and the agent's answer). */
  async resumeStart(id: string): Promise<void> {
    const row = await findReplica(this.store.db, id);
    if (row?.state !== "pending" || row.spec === null) return;
    const spec = replicaSpecSchema.parse(JSON.parse(row.spec));
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
      if (terminalReplicaStates.includes(row.state as ReplicaState)) {
        // Failed or stopped: nothing runs, and nothing needs telling.
        await deleteReplica(this.store.db, id);
        return { ...(await this.viewOf(row)), state: row.state as ReplicaState, endpoint: null };
      }
      // Its agent cannot be told now. The row is kept with the stop marked: deleting it let a returning
      // node report the engine again as a ready replica nobody asked for. The first heartbeat that
      // reports it sends the stop (see heartbeat); one that no longer reports it clears the row.
      await updateReplica(this.store.db, id, { stop_requested: 1, updated_at: at });
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
    if (terminalReplicaStates.includes(status.state)) {
      await deleteReplica(this.store.db, id);
      return { ...(await this.viewOf(row)), state: status.state, endpoint: null };
    }
    await updateReplica(this.store.db, id, { state: status.state, status: JSON.stringify(status), stop_requested: 1, updated_at: at });
    return await this.getReplica(id);
  }

  private async viewOf(row: ReplicaRow): Promise<ReplicaView> {
    const node = await findNode(this.store.db, row.node);
    return this.replicaView(row, node, undefined);
  }

  async replicaLogs(id: string, tail: number, follow: boolean, signal?: AbortSignal): Promise<Readable> {
    const row = await findReplica(this.store.db, id);
    if (!row) throw this.replicaNotFound(id);
    const { address } = await this.agentOf(row.node);
    return await replicaLogsFromAgent(address, id, tail, follow, signal);
  }
}
