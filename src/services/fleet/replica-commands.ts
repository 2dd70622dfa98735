import type { ResolvedProfile } from "../../catalog/index.js";
import { DomainError } from "../../errors/light.js";
import { chooseCards, gangPlace, holdsCards, isFollowerId, memberId, storableReplicaSpec, type NodeState } from "../../fleet/index.js";
import { checkNode, demandProfile, snapshotCard, type Snapshot } from "../../placement/index.js";
import type { ReplicaSpec, ReplicaStatus, ReplicaView } from "../../protocol/index.js";
import {
  deleteReplica,
  deleteReplicaIntent,
  findCanary,
  findReplica,
  insertReplicaIntent,
  listReplicaHoldings,
  listReplicaIntents,
  listReplicas,
  updateReplica,
  upsertReplica,
  type StoredNode,
  type StoredReplica,
  type Store,
} from "../../store/index.js";
import { loadAdapterOnAgent, startReplicaOnAgent, stopReplicaOnAgent, unloadAdapterOnAgent, type AgentAddress } from "../agent-client.js";
import type { CatalogService } from "../catalog-service.js";
import { cardOwners } from "../fleet-views.js";
import { heldReplica } from "../held-replica.js";
import type { AgentAddresses } from "./agent-addresses.js";
import { replicaNotFound } from "./fleet-not-found.js";
import type { FleetViewsReader } from "./fleet-views-reader.js";
import { checkHandPickedCards, checkNodeHasCards } from "./hand-picked-cards.js";
import type { ReplicaExtras, ReplicaSpecs } from "./replica-specs.js";

/** A replica started by hand: the model, the node, and optionally the profile, cards and id. */
export interface StartReplicaRequest extends ReplicaExtras {
  readonly model: string;
  readonly node: string;
  readonly profile?: string | undefined;
  readonly cards?: readonly number[] | undefined;
  readonly id?: string | undefined;
}

/** One member of a gang as placement chose it. */
export interface GangMemberStart {
  readonly node: string;
  readonly cards: readonly number[];
}

/** A start where placement put it: one node, or a gang (`members`, the leader first, its node and cards the placement's own). */
export interface PlacedStart {
  readonly model: string;
  readonly profile: string;
  readonly node: string;
  readonly cards: readonly number[];
  readonly members?: readonly GangMemberStart[] | undefined;
  readonly canary?: { readonly revision: string } | undefined;
}

/**
 * What the server tells agents to do with replicas: start one by hand or
 * where placement put it, send a recorded start again, stop one, change its
 * adapters. The row is written before the agent is called, so a crash in
 * between never leaves an engine nobody knows of.
 */
export class ReplicaCommands {
  constructor(
    private readonly store: Store,
    private readonly catalog: CatalogService,
    private readonly gpuMemoryUtilization: number,
    private readonly views: FleetViewsReader,
    private readonly addresses: AgentAddresses,
    private readonly specs: ReplicaSpecs,
    private readonly now: () => number,
  ) {}

  private iso(): string {
    return new Date(this.now()).toISOString();
  }

  /** Loads an adapter into a ready replica's running engine, or unloads one, through its agent, with the replica's own key. */
  async changeAdapterOnReplica(id: string, change: { action: "load"; adapter: { name: string; source: string } } | { action: "unload"; name: string }): Promise<void> {
    const row = await findReplica(this.store.db, id);
    if (!row) throw replicaNotFound(id);
    const { address } = await this.addresses.agentOf(row.node);
    const apiKey = row.spec?.api_key;
    if (change.action === "load") await loadAdapterOnAgent(address, id, change.adapter, apiKey);
    else await unloadAdapterOnAgent(address, id, change.name, apiKey);
  }

  /**
   * Records the replica (pending) before its agent is called, then calls it.
   * A crash in between leaves a row naming the node, cards and spec, which
   * the reconciler sends again (the agent answers a repeated start with what
   * runs), never an engine nobody knows of. The stored spec holds the names
   * secret_env reads, never their values.
   */
  private async launch(address: AgentAddress, spec: ReplicaSpec, profile: ResolvedProfile, managed: boolean, arm: "canary" | null = null): Promise<ReplicaStatus> {
    await this.record(address, spec, profile);
    await insertReplicaIntent(this.store.db, { id: spec.id, model: spec.model, managed: managed ? 1 : 0, placed_at: this.iso(), withdrawn_at: null, withdraw_reason: null, arm });
    return await this.sendStart(address, spec, managed);
  }

  private async record(address: AgentAddress, spec: ReplicaSpec, profile: ResolvedProfile): Promise<void> {
    const at = this.iso();
    const pending: ReplicaStatus = { id: spec.id, model: spec.model, profile: spec.profile, engine: spec.engine, cards: spec.cards, state: "fetching", since: at };
    await upsertReplica(this.store.db, { id: spec.id, node: address.name, status: pending, pending: true, spec: storableReplicaSpec(spec, profile), stop_requested: false, created_at: at, updated_at: at });
  }

  private async sendStart(address: AgentAddress, spec: ReplicaSpec, managed: boolean): Promise<ReplicaStatus> {
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
    return status;
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
    const control = (await this.views.nodeControls()).get(node.name);
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
  async startReplica(body: StartReplicaRequest): Promise<ReplicaView> {
    const { model, profile } = await this.specs.profileOf(body.model, body.profile);
    if (profile.nodes > 1) {
      throw new DomainError(
        "invalid_profile",
        `${model.name}/${profile.name} spans ${profile.nodes} nodes: its replicas are placed as gangs by the reconciler, not started on one node by hand`,
        `Let the reconciler place it: \`llmgw ctl model scale ${model.name} --min 1\` (or pick a one-node profile with --profile).`,
      );
    }
    if (body.id !== undefined && isFollowerId(body.id)) {
      throw new DomainError("invalid_input", `replica id ${body.id} ends like a member of a replica over several nodes (.rankN)`, "Give the replica another --id.");
    }
    // Before any node is looked at: a secret the server lacks is the operator's to fix, whichever node is chosen.
    this.specs.checkSecrets(model, profile);
    const { node, address, state } = await this.addresses.agentOf(body.node);
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
      gpuMemoryUtilization: this.gpuMemoryUtilization,
    });
    if (!check.fits) {
      throw new DomainError("does_not_fit", `${model.name}/${profile.name} does not fit on node ${node.name}: ${check.reason}`, "Choose another node or other cards, or stop a replica there first (`llmgw ctl nodes` shows what runs where).");
    }
    const id = body.id ?? this.specs.newReplicaId(model.name);
    const existing = await findReplica(this.store.db, id);
    if (existing) {
      // Before the agent is asked: recording the new one would move the existing row to this node.
      throw new DomainError(
        "replica_conflict",
        `replica ${id} already exists on node ${existing.node} (${existing.model}/${existing.profile}, ${existing.state})`,
        `Give the new replica another --id, or stop that one first (\`llmgw ctl replica stop ${id}\`; that also clears a failed one).`,
      );
    }
    await this.launch(address, this.specs.forNew(id, model, profile, cards, body), profile, false);
    return await this.views.getReplica(id);
  }

  /**
   * Starts a replica where placement put it (the reconciler's start). Answers
   * its id once recorded and sent; an agent's refusal leaves the row failed,
   * with the reason, for the reconciler's backoff.
   */
  async startPlaced(placement: PlacedStart, simulation?: ReplicaExtras["simulation"]): Promise<string> {
    const { model, profile } = await this.specs.profileOf(placement.model, placement.profile, placement.canary?.revision);
    const id = this.specs.newReplicaId(model.name);
    const arm = placement.canary ? "canary" : null;
    const extras = simulation ? { simulation } : {};
    if (placement.members !== undefined && placement.members.length > 1) {
      await this.startGang(id, { model, profile }, placement.members, extras, arm);
      return id;
    }
    const { address } = await this.addresses.agentOf(placement.node);
    await this.launch(address, this.specs.forNew(id, model, profile, placement.cards, extras), profile, true, arm);
    return id;
  }

  /**
   * A replica over several nodes. Every member's row is written first (the
   * leader's with the intent), so a crash part-way leaves a record the
   * reconciler finishes (resumeStart), never an engine nobody knows of. Then
   * the leader, whose agent reserves the rendezvous port and answers it with
   * the start, then every other member, told the leader's fabric address and
   * that port. A member that cannot be started leaves its row failed, which
   * fails the whole replica on the next pass (its members are stopped and a
   * new gang placed), never a leader waiting alone.
   */
  private async startGang(id: string, { model, profile }: Awaited<ReturnType<ReplicaSpecs["profileOf"]>>, members: readonly GangMemberStart[], extras: ReplicaExtras, arm: "canary" | null): Promise<void> {
    const agents = await Promise.all(members.map(async (member) => await this.addresses.agentOf(member.node)));
    const leader = agents[0];
    if (leader === undefined) throw new Error("a gang was placed without members");
    const fabric = leader.node.fabricNetwork;
    if (fabric === undefined) {
      throw new DomainError(
        "fabric_address_missing",
        `node ${leader.node.name} reports no address on its fabric (${leader.node.fabric}), so the members of ${model.name}/${profile.name} over ${members.length} nodes have nowhere to meet its leader`,
        `Start the agent on ${leader.node.name} with --fabric-address (its address on the fabric the members share); every node a replica over several nodes may use needs one.`,
      );
    }
    const launches = agents.map((agent, rank) => {
      const networkInterface = agent.node.fabricNetwork?.interface;
      const distributed = { nodes: members.length, rank, leader_address: fabric.address, replica: id, ...(networkInterface !== undefined ? { network_interface: networkInterface } : {}) };
      const spec = this.specs.forNew(memberId(id, rank), model, profile, members[rank]?.cards ?? [], { ...extras, distributed });
      return { spec, address: agent.address, pending: true };
    });
    for (const launch of launches) await this.record(launch.address, launch.spec, profile);
    await insertReplicaIntent(this.store.db, { id, model: model.name, managed: 1, placed_at: this.iso(), withdrawn_at: null, withdraw_reason: null, arm });
    await this.sendGangStarts(launches);
  }

  /** The leader's start (when still pending), then every pending member's with the port its answer carries. */
  private async sendGangStarts(members: readonly { spec: ReplicaSpec; address: AgentAddress; pending: boolean; port?: number | undefined }[]): Promise<void> {
    const [leader, ...others] = members;
    if (leader === undefined) return;
    let port = leader.port;
    if (leader.pending) {
      const answer = await this.sendStart(leader.address, leader.spec, true);
      port = answer.rendezvous_port;
      if (port === undefined) {
        const reason = `the agent on ${leader.address.name} did not reserve a rendezvous port for ${leader.spec.id} (an agent older than this server runs there); upgrade it to serve replicas over several nodes`;
        await updateReplica(this.store.db, leader.spec.id, { status: { ...answer, state: "failed", reason, since: this.iso() }, updated_at: this.iso() });
        throw new DomainError("agent_too_old", reason, `Upgrade llmgw on ${leader.address.name}.`);
      }
    }
    // Not yet known (the leader's answer not heard): the next pass sends the rest.
    if (port === undefined) return;
    for (const member of others) {
      if (!member.pending || member.spec.distributed === undefined) continue;
      await this.sendStart(member.address, { ...member.spec, distributed: { ...member.spec.distributed, port } }, true);
    }
  }

  /** A gang's recorded starts sent again: its leader's if unconfirmed, then each unconfirmed member's. */
  private async resumeGang(replica: string, model: string): Promise<void> {
    const rows = (await listReplicas(this.store.db, { model })).flatMap((row) => {
      const place = gangPlace(row.id, row.spec);
      return place?.replica === replica && row.spec !== null ? [{ row, spec: row.spec, rank: place.rank }] : [];
    });
    rows.sort((a, b) => a.rank - b.rank);
    if (rows[0]?.rank !== 0) return;
    const intent = (await listReplicaIntents(this.store.db)).find((candidate) => candidate.id === replica);
    const canary = intent?.arm === "canary" ? await findCanary(this.store.db, model) : undefined;
    const { model: catalogModel, profile } = await this.specs.profileOf(model, rows[0].row.profile, canary?.revision);
    const members = await Promise.all(
      rows.map(async ({ row, spec }) => ({
        spec: this.specs.again(row.id, catalogModel, profile, spec),
        address: (await this.addresses.agentOf(row.node)).address,
        pending: row.pending,
        port: row.status.rendezvous_port,
      })),
    );
    await this.sendGangStarts(members);
  }

  /** Sends a recorded start again (a crash came between recording it and the agent's answer). */
  async resumeStart(id: string): Promise<void> {
    const row = await findReplica(this.store.db, id);
    const gang = row === undefined ? undefined : gangPlace(row.id, row.spec);
    if (row !== undefined && gang !== undefined) return await this.resumeGang(gang.replica, row.model);
    if (!row?.pending || row.spec === null) return;
    // A canary replica is sent again at its canary's revision, not the stable one.
    const intent = (await listReplicaIntents(this.store.db)).find((candidate) => candidate.id === id);
    const canary = intent?.arm === "canary" ? await findCanary(this.store.db, row.model) : undefined;
    const { model, profile } = await this.specs.profileOf(row.model, row.profile, canary?.revision);
    const spec = this.specs.again(id, model, profile, row.spec);
    const { address } = await this.addresses.agentOf(row.node);
    await this.sendStart(address, spec, true);
  }

  /**
   * Stops a replica (draining first with `drain`), or clears a failed one. A
   * replica over several nodes is stopped by its leader: without a drain its
   * other members are stopped right after; with one they keep running until
   * the leader has finished what it serves (the reconciler stops a member
   * whose leader is gone).
   */
  async stopReplica(id: string, drain: boolean): Promise<ReplicaView> {
    const row = await findReplica(this.store.db, id);
    if (!row) throw replicaNotFound(id);
    const view = await this.stopOne(row, drain);
    const gang = gangPlace(row.id, row.spec);
    if (gang?.rank === 0 && !drain) {
      const members = (await listReplicas(this.store.db, { model: row.model })).filter((other) => other.id !== row.id && gangPlace(other.id, other.spec)?.replica === gang.replica);
      // Each member on its own: one unreachable agent must not keep the others running.
      await Promise.all(members.map(async (member) => await this.stopOne(member, false).catch(() => undefined)));
    }
    return view;
  }

  private async stopOne(row: StoredReplica, drain: boolean): Promise<ReplicaView> {
    const id = row.id;
    const { address, state } = await this.addresses.agentOf(row.node);
    const at = this.iso();
    if (state === "lost") {
      if (!holdsCards(row.state)) {
        // Failed or stopped: nothing runs, and nothing needs telling.
        await deleteReplica(this.store.db, id);
        return { ...(await this.views.viewOf(row)), state: row.state, endpoint: null };
      }
      // Its agent cannot be told now. The row is kept with the stop marked: deleting it let a returning
      // node report the engine again as a ready replica nobody asked for. The first heartbeat that
      // reports it sends the stop (see heartbeat); one that no longer reports it clears the row.
      await updateReplica(this.store.db, id, { stop_requested: true, updated_at: at });
      return await this.views.getReplica(id);
    }
    let status: ReplicaStatus;
    try {
      status = await stopReplicaOnAgent(address, id, drain);
    } catch (error) {
      if (error instanceof DomainError && error.code === "replica_not_found") {
        // The agent has forgotten it already (reported stopped or failed): nothing runs.
        await deleteReplica(this.store.db, id);
        return { ...(await this.views.viewOf(row)), state: "stopped", endpoint: null };
      }
      throw error;
    }
    if (!holdsCards(status.state)) {
      await deleteReplica(this.store.db, id);
      return { ...(await this.views.viewOf(row)), state: status.state, endpoint: null };
    }
    await updateReplica(this.store.db, id, { status, stop_requested: true, updated_at: at });
    return await this.views.getReplica(id);
  }
}
