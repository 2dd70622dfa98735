import type { CatalogModel } from "../catalog/index.js";
import { demandProfile, snapshotCard } from "../placement/index.js";
import type { NodeView } from "../protocol/index.js";
import type { CanaryRow, StoredReplica, ModelStatusRow, ReplicaIntentRow } from "../store/index.js";
import { gangPlace, gangStanding, groupByGang } from "../fleet/index.js";
import type { Observed, ObservedMember, ObservedNode, ObservedReplica, StrayMember } from "./types.js";

/** What the store and the fleet registry hold, read once for one pass (or one question about the fleet). */
export interface FleetState {
  readonly models: readonly CatalogModel[];
  readonly statuses: readonly ModelStatusRow[];
  readonly nodes: readonly NodeView[];
  readonly rows: readonly StoredReplica[];
  readonly intents: readonly ReplicaIntentRow[];
  readonly canaries: readonly CanaryRow[];
}

/**
 * One pass's view of the world: what it read, and the fleet as the pure
 * decisions take it. A pass hands it to every step that needs it, so no step
 * reads back what an earlier one left behind.
 */
export interface Observation extends FleetState {
  readonly observed: Observed;
  /** The models by name, for what a pass's actions need of the catalog. */
  readonly modelOf: ReadonlyMap<string, CatalogModel>;
  /** The nodes whose agents run the simulated engine. */
  readonly simulatedNodes: ReadonlySet<string>;
}

/** The fleet as the pure decisions take it, from what was read at `nowMs`; reads nothing. */
export function observe(state: FleetState, nowMs: number): Observation {
  const intentOf = new Map(state.intents.map((intent) => [intent.id, intent]));
  const nodeOf = new Map(state.nodes.map((node) => [node.name, node]));
  const modelOf = new Map(state.models.map((model) => [model.name, model]));
  const replicas = state.rows.map((row): ObservedReplica => {
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
      inFlight: status.load ? status.load.running + status.load.waiting : undefined,
      reason: status.reason ?? null,
      memoryBytes: profile ? demandProfile(profile, undefined).memoryBytes : 0,
      cpuCores: profile?.cpu_cores ?? 0,
      ...(intent?.arm === "canary" ? { arm: "canary" as const } : {}),
    };
  });
  const observed: Observed = {
    nowMs,
    nodes: state.nodes.map(
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
    ...foldGangs(state.rows, replicas),
  };
  const simulatedNodes = new Set(state.nodes.filter((node) => node.simulated).map((node) => node.name));
  return { ...state, observed, modelOf, simulatedNodes };
}

/** A replica a restart of `model` replaces: the reconciler's own, live, not already leaving. */
export function replacedByRestart(replica: ObservedReplica, model: string): boolean {
  return replica.model === model && replica.managed && replica.withdrawnAtMs === undefined && replica.state !== "failed" && replica.state !== "stopped" && replica.state !== "lost";
}

/**
 * A replica over several nodes is one replica to every decision: its members'
 * rows fold into the leader's, whose state becomes the gang's (gangStanding),
 * and whose memory and cards hold on every member's node. Members whose
 * leader row is gone are strays, to be stopped.
 */
function foldGangs(rows: readonly StoredReplica[], replicas: readonly ObservedReplica[]): { replicas: ObservedReplica[]; strays: StrayMember[] } {
  const { places, membersOf } = groupByGang(rows, (row) => gangPlace(row.id, row.spec));
  if (membersOf.size === 0) return { replicas: [...replicas], strays: [] };
  const observedOf = new Map(replicas.map((replica) => [replica.id, replica]));
  const folded: ObservedReplica[] = [];
  const strays: StrayMember[] = [];
  places.forEach((place, index) => {
    const replica = replicas[index];
    if (replica === undefined) return;
    if (place === undefined) {
      folded.push(replica);
      return;
    }
    const members = (membersOf.get(place.replica) ?? []).flatMap(({ rank, item }) => {
      const observed = observedOf.get(item.id);
      return observed === undefined ? [] : [{ rank, replica: observed }];
    });
    const leaderPresent = members.some((member) => member.rank === 0);
    if (!leaderPresent) {
      strays.push({ id: replica.id, model: replica.model, node: replica.node, cards: replica.state === "failed" || replica.state === "stopped" ? [] : replica.cards });
      return;
    }
    if (place.rank !== 0) return;
    const standing = gangStanding(
      members.map((member) => ({ rank: member.rank, node: member.replica.node, state: member.replica.state, reason: member.replica.reason })),
      place.nodes,
    );
    folded.push({
      ...replica,
      state: standing.state,
      reason: standing.reason,
      members: members.map((member): ObservedMember => ({ id: member.replica.id, rank: member.rank, node: member.replica.node, cards: member.replica.cards })),
    });
  });
  return { replicas: folded, strays };
}
