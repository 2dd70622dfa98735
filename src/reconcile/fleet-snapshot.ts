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
    replicas: [
      ...observed.replicas
        .filter((replica) => replica.state !== "failed" && replica.state !== "stopped")
        // A gang holds cards on every member's node, each under the gang's id, so preemption
        // knows them for one replica and never stops a member alone.
        .flatMap((replica) =>
          (replica.members ?? [{ node: replica.node, cards: replica.cards }]).map((member) => ({
            id: replica.id,
            model: replica.model,
            profile: replica.profile,
            node: member.node,
            cards: member.cards,
            memoryBytes: replica.memoryBytes,
            cpuCores: replica.cpuCores,
            modelClass: classOf(replica.model),
            ...(replica.members !== undefined ? { gangNodes: replica.members.length } : {}),
          })),
        ),
      // A stray member holds its cards until its agent has stopped it.
      ...(observed.strays ?? [])
        .filter((stray) => stray.cards.length > 0)
        .map((stray) => ({ id: stray.id, model: stray.model, profile: "", node: stray.node, cards: stray.cards, memoryBytes: 0, cpuCores: 0, modelClass: classOf(stray.model) })),
    ],
  };
}
