import { randomBytes } from "node:crypto";
import type { Readable } from "node:stream";
import { ControlSecrets } from "../auth/index.js";
import type { InventoryNode } from "../fleet/index.js";
import type { HeartbeatResponse, JoinResponse, NodeView, ReplicaCounts, ReplicaProgress, ReplicaSpec, ReplicaView } from "../protocol/index.js";
import type { Store } from "../store/index.js";
import type { AgentAddress } from "./agent-client.js";
import type { CatalogService } from "./catalog-service.js";
import { AgentAddresses } from "./fleet/agent-addresses.js";
import type { FleetSettings } from "./fleet/fleet-settings.js";
import { FleetViewsReader } from "./fleet/fleet-views-reader.js";
import { HeartbeatIntake, type FleetLog } from "./fleet/heartbeat-intake.js";
import { NodeJoin } from "./fleet/node-join.js";
import { NodeStates } from "./fleet/node-states.js";
import { NodesHeard } from "./fleet/nodes-heard.js";
import { ReplicaCommands, type StartReplicaRequest } from "./fleet/replica-commands.js";
import { replicaLogs } from "./fleet/replica-logs.js";
import { ReplicaSpecs, type ReplicaExtras } from "./fleet/replica-specs.js";

/**
 * The server's side of the fleet: join tokens, joins and
 * heartbeats, the node registry, and replicas started and stopped by hand on
 * a named node. The state of record for a replica is what its agent last
 * reported; the server adds what only it knows (the spec it sent, a stop it
 * asked for) and whether the node is still heard from.
 *
 * One door for the routes, the reconciler and the other services; the work
 * is done by its parts in fleet/: joins, heartbeats, node states, the views
 * (FleetViewsReader), agent addresses, replica specs, replica commands and
 * logs.
 */
export class FleetService {
  readonly startedAtMs: number;
  private readonly joins: NodeJoin;
  private readonly heartbeats: HeartbeatIntake;
  private readonly states: NodeStates;
  private readonly views: FleetViewsReader;
  private readonly addresses: AgentAddresses;
  private readonly commands: ReplicaCommands;

  constructor(
    private readonly store: Store,
    catalog: CatalogService,
    settings: FleetSettings,
    now: () => number = Date.now,
  ) {
    this.startedAtMs = now();
    const controlSecrets = new ControlSecrets(settings.serverKey ?? randomBytes(32));
    const heard = new NodesHeard(store, settings.heartbeatDeadlineMs, this.startedAtMs, now);
    this.states = new NodeStates(store, settings, this.startedAtMs, now, heard);
    this.addresses = new AgentAddresses(store, this.states, controlSecrets, settings.agentDispatcher);
    this.joins = new NodeJoin(store, settings, now, (node) => this.addresses.controlSecretOf(node));
    this.heartbeats = new HeartbeatIntake(store, now, (node) => controlSecrets.of(node.credential_hash), heard, settings.agentDispatcher);
    this.views = new FleetViewsReader(store, this.states, heard, now);
    this.commands = new ReplicaCommands(store, catalog, settings.gpuMemoryUtilization, this.views, this.addresses, new ReplicaSpecs(catalog, settings), now);
    this.inventoryNodes = this.views.inventoryNodes;
    this.replicaCounts = this.views.replicaCounts;
  }

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

  /** See FleetViewsReader.viewKey. */
  async viewKey(): Promise<{ readonly key: string; readonly lastSeen: ReadonlyMap<string, string>; readonly progressRevision: number }> {
    return await this.views.viewKey();
  }

  /** Called after each heartbeat that changed what the reconciler decides on; the others change nothing it acts on. */
  whenHeartbeatDecisive(listener: () => void): void {
    this.heartbeats.whenDecisive(listener);
  }

  /** The next moment a node's state changes with no beat (see NodeStates), for the reconciler's timer. */
  nextNodeStateChangeMs(nodes: readonly Pick<NodeView, "name" | "last_seen_at">[]): number | undefined {
    return this.states.nextChangeMs(nodes);
  }

  async listNodes(): Promise<NodeView[]> {
    return await this.views.listNodes();
  }

  /** The fleet as the planner reads it (GET /api/v1/plan without --gpus): a card is free when no live replica holds it. */
  readonly inventoryNodes: () => Promise<InventoryNode[]>;

  async getNode(name: string): Promise<NodeView> {
    return await this.views.getNode(name);
  }

  async listReplicas(filter: { model?: string | undefined; node?: string | undefined } = {}): Promise<ReplicaView[]> {
    return await this.views.listReplicas(filter);
  }

  /** See FleetViewsReader.listReplicasWithProgress. */
  async listReplicasWithProgress(): Promise<{ readonly views: ReplicaView[]; readonly progress: ReadonlyMap<string, ReplicaProgress | undefined> }> {
    return await this.views.listReplicasWithProgress();
  }

  /** Each fetch's progress now, read from its column alone. */
  async replicaProgressNow(): Promise<Map<string, ReplicaProgress>> {
    return await this.views.replicaProgressNow();
  }

  /** The views of these replicas as they are now; an id with no row is left out. */
  async replicasById(ids: readonly string[]): Promise<ReplicaView[]> {
    return await this.views.replicasById(ids);
  }

  async getReplica(id: string): Promise<ReplicaView> {
    return await this.views.getReplica(id);
  }

  /** Ready and draining replicas with the key each engine expects, for the routing table (never for an API answer). */
  async routingReplicas(): Promise<(ReplicaView & { api_key: string | undefined })[]> {
    return await this.views.routingReplicas();
  }

  /** See FleetViewsReader.liveReplicasWithSpecs. */
  async liveReplicasWithSpecs(model: string): Promise<{ readonly view: ReplicaView; readonly spec: ReplicaSpec | null }[]> {
    return await this.views.liveReplicasWithSpecs(model);
  }

  /** Ready and counted replicas per model, for the model views. */
  readonly replicaCounts: () => Promise<ReadonlyMap<string, ReplicaCounts>>;

  /** Loads an adapter into a ready replica's running engine, or unloads one, through its agent, with the replica's own key. */
  async changeAdapterOnReplica(id: string, change: { action: "load"; adapter: { name: string; source: string } } | { action: "unload"; name: string }): Promise<void> {
    await this.commands.changeAdapterOnReplica(id, change);
  }

  /** How to call a node's agent (its control URL and the control secret it checks). */
  async agentAddress(nodeName: string): Promise<AgentAddress> {
    return (await this.addresses.agentOf(nodeName)).address;
  }

  /** Starts a catalog model's profile on a named node, on the cards given or the lowest free ones. */
  async startReplica(request: StartReplicaRequest): Promise<ReplicaView> {
    return await this.commands.startReplica(request);
  }

  /** Starts a replica where placement put it (the reconciler's start); see ReplicaCommands.startPlaced. */
  async startPlaced(
    placement: { model: string; profile: string; node: string; cards: readonly number[]; canary?: { readonly revision: string }; members?: readonly { readonly node: string; readonly cards: readonly number[] }[] },
    simulation?: ReplicaExtras["simulation"],
  ): Promise<string> {
    return await this.commands.startPlaced(placement, simulation);
  }

  /** Sends a recorded start again (a crash came between recording it and the agent's answer). */
  async resumeStart(id: string): Promise<void> {
    await this.commands.resumeStart(id);
  }

  /** Stops a replica (draining first with `drain`), or clears a failed one. */
  async stopReplica(id: string, drain: boolean): Promise<ReplicaView> {
    return await this.commands.stopReplica(id, drain);
  }

  async replicaLogs(id: string, tail: number, follow: boolean, signal?: AbortSignal): Promise<Readable> {
    return await replicaLogs(this.store, this.addresses, id, tail, follow, signal);
  }
}
