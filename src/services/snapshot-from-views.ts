import { type CatalogModel, engineNames, type EngineName } from "../catalog/index.js";
import { holdsCards } from "../fleet/index.js";
import { snapshotCard, type Snapshot } from "../placement/index.js";
import type { NodeView, ReplicaView } from "../protocol/index.js";
import { heldReplica } from "./held-replica.js";

/**
 * The fleet as placement sees it, from the views the API lists: nodes that
 * take nothing new (not ready, cordoned, draining) marked so, and every
 * replica that holds cards, with the host memory and cores its profile
 * reserves. Pure, so "would this fit now?" is answered by placement's own
 * filters and never by a second copy of them.
 */
export function snapshotFromViews(nodes: readonly NodeView[], replicas: readonly ReplicaView[], models: readonly CatalogModel[]): Snapshot {
  const byName = new Map(models.map((model) => [model.name, model]));
  return {
    nodes: nodes.map((node) => {
      const unschedulable = node.state !== "ready" ? node.state : node.draining ? "draining" : node.cordoned ? "cordoned" : undefined;
      return {
        name: node.name,
        schedulable: unschedulable === undefined,
        ...(unschedulable ? { unschedulableReason: unschedulable } : {}),
        engines: node.engines.filter((engine): engine is EngineName => (engineNames as readonly string[]).includes(engine)),
        cards: node.gpus.map(snapshotCard),
        memoryBytes: node.memory_bytes,
        cpuCores: node.cpu_cores,
      };
    }),
    replicas: replicas.filter((replica) => holdsCards(replica.state)).map((replica) => heldReplica({ ...replica, cards: replica.gpus }, byName)),
  };
}
