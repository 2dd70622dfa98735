import type { ReplicaView } from "./types.ts";

/** Where a replica runs: its node, or every member's node by rank for a replica over several nodes (as `ctl replicas` prints it). */
export function replicaNodes(replica: Pick<ReplicaView, "node" | "members">): string {
  return replica.members ? replica.members.map((member) => `${member.node} (rank ${member.rank})`).join(" + ") : replica.node;
}

/** Its cards: on `node` when given (a gang's member there), else the replica's own, or every member's joined by " + ". */
export function replicaCards(replica: Pick<ReplicaView, "gpus" | "members">, node?: string): string {
  const cards = (gpus: readonly number[]) => (gpus.length > 0 ? gpus.join(", ") : "CPU");
  if (!replica.members) return cards(replica.gpus);
  const member = node === undefined ? undefined : replica.members.find((each) => each.node === node);
  if (member) return `${cards(member.gpus)} (rank ${member.rank} of ${replica.members.length})`;
  return replica.members.map((each) => cards(each.gpus)).join(" + ");
}

/** Whether the replica holds cards on `node`: its own node, or a member's. */
export function runsOn(replica: Pick<ReplicaView, "node" | "members">, node: string): boolean {
  return replica.node === node || (replica.members?.some((member) => member.node === node) ?? false);
}
