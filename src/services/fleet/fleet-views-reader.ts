import { gangPlace, isFollowerId, type InventoryNode } from "../../fleet/index.js";
import type { NodeView, ReplicaCounts, ReplicaProgress, ReplicaSpec, ReplicaView } from "../../protocol/index.js";
import {
  findNode,
  findReplica,
  findReplicas,
  listNodeControls,
  listNodes,
  listNodeTimes,
  listReplicaHoldings,
  listReplicaIntents,
  listReplicaProgress,
  listReplicas,
  readFleetRevisions,
  type StoredReplica,
  type Store,
} from "../../store/index.js";
import { nodeView, replicaCountsOf, replicaView, replicaViewState, type NodeControl, type ReplicaIntentView } from "../fleet-views.js";
import { foldGangViews } from "../gang-views.js";
import { nodeNotFound, replicaNotFound } from "./fleet-not-found.js";
import type { NodeStates } from "./node-states.js";
import type { NodesHeard } from "./nodes-heard.js";

/** How old the node times a view key is worked out from may be (see nodeTimes). */
const nodeTimesMaxAgeMs = 1000;

type ReplicaFilter = { model?: string | undefined; node?: string | undefined };

/**
 * The fleet as the API, the console and the routing table read it: node
 * views and replica views, built from the stored rows, each node's state
 * now, and the reconciler's withdrawals. Reads only.
 */
export class FleetViewsReader {
  constructor(
    private readonly store: Store,
    private readonly states: NodeStates,
    private readonly heard: NodesHeard,
    private readonly now: () => number,
  ) {}

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

  async listNodes(): Promise<NodeView[]> {
    const [nodes, replicas, controls] = await Promise.all([listNodes(this.store.db), listReplicaHoldings(this.store.db), this.nodeControls()]);
    const states = this.states.nodeStates(nodes);
    const byNode = groupByNode(replicas);
    return nodes.map((node) => nodeView(this.heard.seen(node), states.get(node.name) ?? "lost", byNode.get(node.name) ?? [], controls.get(node.name)));
  }

  /** Cordon and drain, by node. */
  async nodeControls(): Promise<Map<string, NodeControl>> {
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
    if (!node) throw nodeNotFound(name);
    const [state, replicas, controls] = await Promise.all([this.states.nodeStateByKey(node), listReplicaHoldings(this.store.db, { node: name }), this.nodeControls()]);
    return nodeView(this.heard.seen(node), state, replicas, controls.get(name));
  }

  async listReplicas(filter: ReplicaFilter = {}): Promise<ReplicaView[]> {
    return (await this.replicaRowsWithViews(filter)).map(({ view }) => view);
  }

  /** Each replica row with its view, its node's state and the reconciler's intent read alongside. */
  private async replicaRowsWithViews(filter: ReplicaFilter = {}): Promise<{ readonly row: StoredReplica; readonly view: ReplicaView }[]> {
    const [nodes, replicas, intents] = await Promise.all([listNodes(this.store.db), listReplicas(this.store.db, filter), this.replicaIntents()]);
    const states = this.states.nodeStates(nodes);
    const byName = new Map(nodes.map((node) => [node.name, this.heard.seen(node)]));
    return foldGangViews(replicas.map((row) => ({ row, view: replicaView(row, byName.get(row.node), states.get(row.node), intents.get(row.id)) })));
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
    // A gang's view is built from all its members' rows: read with the rest (a member's own id is not a replica's).
    if (rows.some((row) => gangPlace(row.id, row.spec) !== undefined)) {
      const wanted = new Set(ids);
      return (await this.replicaRowsWithViews()).filter((entry) => wanted.has(entry.view.id)).map((entry) => entry.view);
    }
    const names = [...new Set(rows.map((row) => row.node))];
    const [nodes, times, intents] = await Promise.all([Promise.all(names.map(async (name) => await findNode(this.store.db, name))), this.nodeTimes(), this.replicaIntents()]);
    const byName = new Map(nodes.filter((node) => node !== undefined).map((node) => [node.name, this.heard.seen(node)]));
    // Every node's time, as the whole list has it: whether the settling window is still open depends on all of them.
    const states = this.states.nodeStates(times);
    return rows.map((row) => replicaView(row, byName.get(row.node), states.get(row.node), intents.get(row.id)));
  }

  async getReplica(id: string): Promise<ReplicaView> {
    const row = await findReplica(this.store.db, id);
    if (!row) throw replicaNotFound(id);
    // A gang's leader is shown with its members (read with the rest of its model's replicas).
    if (gangPlace(row.id, row.spec)?.rank === 0) {
      const gang = (await this.replicaRowsWithViews({ model: row.model })).find((entry) => entry.row.id === id);
      if (gang) return gang.view;
    }
    const [node, intents] = await Promise.all([findNode(this.store.db, row.node), this.replicaIntents()]);
    return replicaView(row, node === undefined ? undefined : this.heard.seen(node), node === undefined ? undefined : await this.states.nodeStateByKey(node), intents.get(id));
  }

  /** A replica's view from its row alone, its node's state unknown: for a replica just cleared away. */
  async viewOf(row: StoredReplica): Promise<ReplicaView> {
    return replicaView(row, await findNode(this.store.db, row.node), undefined);
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

  /** Ready and counted replicas per model, for the model views. */
  readonly replicaCounts = async (): Promise<ReadonlyMap<string, ReplicaCounts>> => {
    const [nodes, replicas] = await Promise.all([this.nodeTimes(), listReplicaHoldings(this.store.db)]);
    const states = this.states.nodeStates(nodes);
    // A gang counts once, by its leader: the other members' rows are not replicas of their own.
    return replicaCountsOf(replicas.filter((row) => !isFollowerId(row.id)).map((row) => ({ model: row.model, state: replicaViewState(row, states.get(row.node)) })));
  };
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
