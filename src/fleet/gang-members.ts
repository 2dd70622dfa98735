import type { DistributedSpec, ReplicaSpec } from "../protocol/index.js";

/**
 * A replica over several nodes is one replica with a row per member: the
 * leader's row carries the replica's own id (its endpoint is the replica's),
 * each other member's id is the replica's with its rank, so every row stays
 * unique across the fleet as agents require and a member's id names its gang.
 */
export function memberId(replica: string, rank: number): string {
  return rank === 0 ? replica : `${replica}.rank${rank}`;
}

/**
 * A gang member other than the leader, by its id alone: for counts read from
 * rows without their specs. A replica started by hand cannot take such an id
 * (startReplica refuses it), so the suffix means a member.
 */
export function isFollowerId(id: string): boolean {
  return /\.rank[1-9][0-9]*$/.test(id);
}

/** Where a stored row stands in a gang: its replica's id, its rank and the gang's size; undefined for a replica on one node. */
export interface GangPlace {
  readonly replica: string;
  readonly rank: number;
  readonly nodes: number;
}

/** The gang a spec belongs to, from its `distributed` part; a spec from before gangs had ids falls back to its own id (rank 0) or the id's rank suffix. */
export function gangPlace(id: string, spec: Pick<ReplicaSpec, "distributed"> | null | undefined): GangPlace | undefined {
  const distributed: DistributedSpec | undefined = spec?.distributed;
  if (distributed === undefined) return undefined;
  const suffix = `.rank${distributed.rank}`;
  const replica = distributed.replica ?? (distributed.rank === 0 ? id : id.endsWith(suffix) ? id.slice(0, -suffix.length) : id);
  return { replica, rank: distributed.rank, nodes: distributed.nodes };
}

/**
 * Each item's place in its gang (undefined for a replica on one node), and
 * each gang's members sorted by rank: what folding a gang into one replica
 * starts from, for the reconciler's observation and the API's views alike.
 */
export function groupByGang<Item>(items: readonly Item[], placeOf: (item: Item) => GangPlace | undefined): { places: (GangPlace | undefined)[]; membersOf: Map<string, { rank: number; item: Item }[]> } {
  const places = items.map(placeOf);
  const membersOf = new Map<string, { rank: number; item: Item }[]>();
  places.forEach((place, index) => {
    const item = items[index];
    if (place === undefined || item === undefined) return;
    const members = membersOf.get(place.replica) ?? [];
    members.push({ rank: place.rank, item });
    membersOf.set(place.replica, members);
  });
  for (const members of membersOf.values()) members.sort((a, b) => a.rank - b.rank);
  return { places, membersOf };
}

/** One member's standing, as a view or the reconciler reads it. */
export interface MemberStanding<State extends string> {
  readonly rank: number;
  readonly node: string;
  readonly state: State;
  readonly reason: string | null;
}

/**
 * The state of a replica over several nodes, from its members': it serves
 * only while every member runs, because each collective operation needs every
 * rank. A member failed or stopped under a live leader fails the replica (the
 * others are then stopped and a new gang placed); a member's node lost makes
 * it lost; a rank with no member recorded (a start cut short) fails it unless
 * the leader is still pending, whose start is then sent again with the rest.
 * Ready only when all are ready.
 */
export function gangStanding<State extends string>(
  members: readonly MemberStanding<State>[],
  nodes: number,
): { readonly state: State | "failed" | "stopped" | "lost" | "pending" | "starting"; readonly reason: string | null } {
  const leader = members.find((member) => member.rank === 0);
  if (leader === undefined) return { state: "failed", reason: "its leader (rank 0) has no record" };
  const others = members.filter((member) => member.rank !== 0);
  // A leader stopped in order ends the replica, whatever its members did after it.
  if (leader.state === "stopped") return { state: "stopped", reason: leader.reason };
  const failed = members.find((member) => member.state === "failed");
  if (failed) return { state: "failed", reason: `member rank ${failed.rank} on ${failed.node} failed: ${failed.reason ?? "no reason given"}` };
  const stopped = others.find((member) => member.state === "stopped");
  if (stopped) return { state: "failed", reason: `member rank ${stopped.rank} on ${stopped.node} stopped, and the replica cannot serve without it` };
  const lost = members.find((member) => member.state === "lost");
  if (lost) return { state: "lost", reason: lost.reason ?? `node ${lost.node} is lost` };
  if (leader.state === "pending") return { state: "pending", reason: null };
  const missing = Array.from({ length: nodes }, (_, rank) => rank).filter((rank) => !members.some((member) => member.rank === rank));
  if (missing.length > 0) return { state: "failed", reason: `rank${missing.length === 1 ? "" : "s"} ${missing.join(", ")} of ${nodes} never started (the server stopped while starting the replica)` };
  // Out of routing: its members stay until the leader has finished what it serves.
  if (leader.state === "draining") return { state: leader.state, reason: leader.reason };
  if (members.every((member) => member.state === "ready")) return { state: leader.state, reason: null };
  const behind = members.find((member) => member.state !== "ready");
  return { state: behind?.state ?? "starting", reason: behind?.reason ?? null };
}
