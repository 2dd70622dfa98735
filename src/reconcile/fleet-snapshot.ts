import type { ModelClass } from "../catalog/index.js";
import type { Snapshot } from "../placement/index.js";
import type { Observed } from "./types.js";

/**
 * The fleet as placement sees it: nodes that take nothing new (lost,
 * settling, cordoned, draining) marked so with the reason, and every replica
 * that holds cards (withdrawn ones too, until their engines have stopped).
 */
export function fleetSnapshot(observed: Observed, classOf: (model: string) => ModelClass): Snapshot {
  return {
    nodes: observed.nodes.map((node) => {
      const unschedulable = node.state !== "ready" ? node.state : node.draining ? "draining" : node.cordoned ? "cordoned" : undefined;
      return { ...node, schedulable: unschedulable === undefined, ...(unschedulable ? { unschedulableReason: unschedulable } : {}) };
    }),
    replicas: observed.replicas
      .filter((replica) => replica.state !== "failed" && replica.state !== "stopped")
      .map((replica) => ({
        id: replica.id,
        model: replica.model,
        profile: replica.profile,
        node: replica.node,
        cards: replica.cards,
        memoryBytes: replica.memoryBytes,
        cpuCores: replica.cpuCores,
        modelClass: classOf(replica.model),
      })),
  };
}
