import type { ResolvedProfile } from "../../catalog/index.js";
import { DomainError } from "../../errors/light.js";
import { chooseCards, holdsCards, storableReplicaSpec, type NodeState } from "../../fleet/index.js";
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
  async startPlaced(
    placement: { model: string; profile: string; node: string; cards: readonly number[]; canary?: { readonly revision: string } },
    simulation?: ReplicaExtras["simulation"],
  ): Promise<string> {
    const { model, profile } = await this.specs.profileOf(placement.model, placement.profile, placement.canary?.revision);
    const { address } = await this.addresses.agentOf(placement.node);
    const id = this.specs.newReplicaId(model.name);
    await this.launch(address, this.specs.forNew(id, model, profile, placement.cards, simulation ? { simulation } : {}), profile, true, placement.canary ? "canary" : null);
    return id;
  }

  /** Sends a recorded start again (a crash came between recording it and the agent's answer). */
  async resumeStart(id: string): Promise<void> {
    const row = await findReplica(this.store.db, id);
    if (!row?.pending || row.spec === null) return;
    // A canary replica is sent again at its canary's revision, not the stable one.
    const intent = (await listReplicaIntents(this.store.db)).find((candidate) => candidate.id === id);
    const canary = intent?.arm === "canary" ? await findCanary(this.store.db, row.model) : undefined;
    const { model, profile } = await this.specs.profileOf(row.model, row.profile, canary?.revision);
    const spec = this.specs.again(id, model, profile, row.spec);
    const { address } = await this.addresses.agentOf(row.node);
    await this.sendStart(address, spec, true);
  }

  /** Stops a replica (draining first with `drain`), or clears a failed one. */
  async stopReplica(id: string, drain: boolean): Promise<ReplicaView> {
    const row = await findReplica(this.store.db, id);
    if (!row) throw replicaNotFound(id);
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
