import { countsTowardModel, holdsCards } from "../fleet/index.js";
import { builtinBuildFor } from "../engines/index.js";
import type { NodeState, NodeView, ReplicaCounts, ReplicaView } from "../protocol/index.js";
import type { StoredNode, StoredReplica } from "../store/index.js";

/**
 * The admin API's views of nodes and replicas, built from stored rows alone.
 * They never throw: one unreadable row must not turn every list of the fleet
 * into a 500 (rows are typed leniently at the store's edge, and here a value
 * that cannot be used, such as an endpoint that is not a URL, is left out).
 */

/** What the node views and card choice need of a replica (a full row or the small columns of store's listReplicaHoldings). */
export type ReplicaPlace = Pick<StoredReplica, "id" | "state" | "cards">;

/** Which card each replica holding cards on a node holds. */
export function cardOwners(replicas: readonly ReplicaPlace[]): Map<number, string> {
  const owners = new Map<number, string>();
  for (const replica of replicas) if (holdsCards(replica.state)) for (const card of replica.cards) owners.set(card, replica.id);
  return owners;
}

/** What an operator asked of a node: cordoned (nothing new goes there), draining (its replicas move away). */
export interface NodeControl {
  readonly cordoned: boolean;
  readonly draining: boolean;
}

export function nodeView(node: StoredNode, state: NodeState, replicasOnNode: readonly ReplicaPlace[], control: NodeControl = { cordoned: false, draining: false }): NodeView {
  const holding = replicasOnNode.filter((replica) => holdsCards(replica.state));
  const owners = cardOwners(holding);
  const { inventory } = node;
  return {
    name: node.name,
    state,
    address: node.address,
    hostname: inventory.hostname,
    fabric: node.fabric,
    labels: { ...node.labels },
    gpus: inventory.gpus.map((gpu) => ({
      index: gpu.index,
      uuid: gpu.uuid,
      name: gpu.name,
      class: gpu.class,
      memory_bytes: gpu.memory_bytes,
      memory_used_bytes: gpu.memory_used_bytes ?? null,
      memory_foreign_bytes: gpu.memory_foreign_bytes ?? null,
      fabric: gpu.fabric,
      replica: owners.get(gpu.index) ?? null,
    })),
    memory_bytes: inventory.memory_bytes,
    cpu_cores: inventory.cpu_cores,
    engines: [...inventory.engines],
    disk_free_bytes: inventory.disk_free_bytes,
    simulated: inventory.simulated,
    comfyui: inventory.comfyui ?? null,
    llama_cpp: inventory.llama_cpp === undefined ? null : inventory.llama_cpp.kind === "llama-server" ? { ...inventory.llama_cpp } : { ...inventory.llama_cpp, builds: [...inventory.llama_cpp.builds] },
    agent_version: inventory.agent_version ?? null,
    fabric_network: node.fabricNetwork === undefined ? null : { ...node.fabricNetwork },
    joined_at: node.joined_at,
    last_seen_at: node.last_seen_at,
    replicas: holding.map((replica) => replica.id),
    // A draining node is cordoned too: nothing new is placed on a node being emptied.
    cordoned: control.cordoned || control.draining,
    draining: control.draining,
  };
}

/**
 * The agent reports its engines on its own loopback; callers elsewhere reach
 * them at the node's host. Undefined when either is not a URL.
 */
export function endpointAtNode(endpoint: string, nodeAddress: string | undefined): string | undefined {
  if (!URL.canParse(endpoint)) return undefined;
  const engineUrl = new URL(endpoint);
  if (engineUrl.protocol !== "http:" && engineUrl.protocol !== "https:") return undefined;
  if (nodeAddress !== undefined && URL.canParse(nodeAddress)) engineUrl.hostname = new URL(nodeAddress).hostname;
  return engineUrl.toString().replace(/\/$/, "");
}

/** A stop asked for while the node was lost: the agent has not heard of it yet, whatever it last reported. */
function stopPendingOf(row: Pick<StoredReplica, "state" | "stop_requested">): boolean {
  return row.stop_requested && holdsCards(row.state) && row.state !== "draining";
}

/** The state a replica is shown in: what its agent reported, unless a stop is pending or its node is lost. */
export function replicaViewState(row: Pick<StoredReplica, "state" | "stop_requested">, state: NodeState | undefined): ReplicaView["state"] {
  if (stopPendingOf(row)) return "draining";
  if (state === "lost" && holdsCards(row.state)) return "lost";
  return row.state;
}

/** What the reconciler holds of a replica: withdrawn from routing (with why) before its engine hears of it. */
export interface ReplicaIntentView {
  readonly withdrawnAt: string | null;
  readonly withdrawReason: string | null;
  /** "canary" for a canary replica. */
  readonly arm?: string | null;
}

export function replicaView(row: StoredReplica, node: StoredNode | undefined, state: NodeState | undefined, intent?: ReplicaIntentView): ReplicaView {
  return { ...stateInView(row, node, state, intent), arm: intent?.arm === "canary" ? "canary" : "stable" };
}

function stateInView(row: StoredReplica, node: StoredNode | undefined, state: NodeState | undefined, intent?: ReplicaIntentView): Omit<ReplicaView, "arm"> {
  const shown = replicaReport(row, node, state);
  if (state === "lost" && holdsCards(row.status.state)) {
    // What it is, whatever was decided about it since: on a node nobody hears from, its engine
    // presumably still running there on its cards. Given up (withdrawn, or its stop asked for),
    // it is out of routing and replaced elsewhere; the stop reaches its agent when the node returns.
    const givenUp = intent?.withdrawnAt != null || stopPendingOf(row);
    return { ...shown, state: "lost", endpoint: givenUp ? null : shown.endpoint, reason: lostReason(row, node, givenUp) };
  }
  if (intent?.withdrawnAt && holdsCards(row.status.state)) {
    // Out of routing from the moment it is withdrawn, before its engine hears of it: a client
    // reading this list stops sending to it while it still answers what it has.
    return { ...shown, state: "draining", endpoint: null, reason: intent.withdrawReason };
  }
  // Recorded, its agent not yet told (or its answer not yet heard).
  if (row.pending) return { ...shown, state: "pending", endpoint: null, reason: null, progress: null };
  return shown;
}

function replicaReport(row: StoredReplica, node: StoredNode | undefined, state: NodeState | undefined): Omit<ReplicaView, "arm"> {
  const { status } = row;
  const gone = !holdsCards(status.state);
  const stopPending = stopPendingOf(row);
  const lost = state === "lost" && !gone;
  const endpoint = status.endpoint === undefined ? undefined : endpointAtNode(status.endpoint, node?.address);
  return {
    id: row.id,
    model: row.model,
    profile: row.profile,
    node: row.node,
    engine: row.engine,
    gpus: [...status.cards],
    state: replicaViewState(row, state),
    endpoint: gone || stopPending ? null : (endpoint ?? null),
    progress: status.progress ? { fraction: status.progress.fraction, bytes_done: status.progress.bytes_done, bytes_total: status.progress.bytes_total ?? null } : null,
    reason: stopPending
      ? `stopped while node ${row.node} was lost (not heard from since ${node?.last_seen_at ?? "?"}); its agent is told to stop it when the node reports it again`
      : lost
        ? `node ${row.node} has not been heard from since ${node?.last_seen_at ?? "?"}`
        : (status.reason ?? null),
    pid: status.pid ?? null,
    adopted: status.adopted ?? false,
    since: status.since,
    created_at: row.created_at,
    llama_cpp: replicaLlamaCpp(row.engine, status.cards.length, node),
    members: null,
  };
}

/**
 * The llama.cpp a llamacpp replica runs on, from its node's inventory: the
 * agent runs llama-server when the node has it, else the built-in engine,
 * whose build follows from the cards the replica was given (it never falls
 * back to the CPU build on cards, so a replica that runs has this build).
 */
export function replicaLlamaCpp(engine: string, cards: number, node: Pick<StoredNode, "inventory"> | undefined): ReplicaView["llama_cpp"] {
  const llamaCpp = node?.inventory.llama_cpp;
  if (engine !== "llamacpp" || llamaCpp === undefined || node?.inventory.simulated) return null;
  if (llamaCpp.kind === "llama-server") return { kind: "llama-server", path: llamaCpp.path, version: llamaCpp.version };
  return { kind: "built-in", version: llamaCpp.version, build: builtinBuildFor(cards) };
}

function lostReason(row: StoredReplica, node: StoredNode | undefined, givenUp: boolean): string {
  const cards = row.status.cards.length > 0 ? `cards ${row.status.cards.join(",")}` : "its CPU share";
  const held = `node ${row.node} has not been heard from since ${node?.last_seen_at ?? "?"}; as far as anyone knows the replica still runs there, holding ${cards}`;
  return givenUp ? `${held}; replaced elsewhere, and its agent is told to stop it when the node reports it again` : held;
}

/** Ready and counted replicas per model, for the model views. */
export function replicaCountsOf(views: readonly Pick<ReplicaView, "model" | "state">[]): Map<string, ReplicaCounts> {
  const counts = new Map<string, ReplicaCounts>();
  for (const replica of views) {
    const current = counts.get(replica.model) ?? { ready: 0, desired: 0 };
    counts.set(replica.model, { ready: current.ready + (replica.state === "ready" ? 1 : 0), desired: current.desired + (countsTowardModel(replica.state) ? 1 : 0) });
  }
  return counts;
}
