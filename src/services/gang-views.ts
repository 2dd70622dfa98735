import { gangPlace, gangStanding, groupByGang } from "../fleet/index.js";
import type { ReplicaMemberView, ReplicaView } from "../protocol/index.js";
import type { StoredReplica } from "../store/index.js";

/**
 * A replica over several nodes shows as one replica: its leader's view, in
 * the state of the whole gang (ready only when every member is), with every
 * member listed by rank; the other members' own rows are left out. A member
 * whose leader row is gone shows on its own while it is being stopped.
 */
export function foldGangViews<Entry extends { readonly row: StoredReplica; readonly view: ReplicaView }>(entries: readonly Entry[]): Entry[] {
  const { places, membersOf } = groupByGang(entries, (entry) => gangPlace(entry.row.id, entry.row.spec));
  if (membersOf.size === 0) return [...entries];
  return entries.flatMap((entry, index) => {
    const place = places[index];
    if (place === undefined) return [entry];
    const members = (membersOf.get(place.replica) ?? []).map(({ rank, item }) => ({ rank, view: item.view }));
    if (!members.some((member) => member.rank === 0)) return [entry];
    if (place.rank !== 0) return [];
    const standing = gangStanding(
      members.map((member) => ({ rank: member.rank, node: member.view.node, state: member.view.state, reason: member.view.reason })),
      place.nodes,
    );
    const serving = standing.state === "ready" || standing.state === "draining";
    const view: ReplicaView = {
      ...entry.view,
      state: standing.state,
      reason: standing.reason,
      // The leader's endpoint is the replica's, and only while every member runs.
      endpoint: serving ? entry.view.endpoint : null,
      members: members.map(
        ({ rank, view: member }): ReplicaMemberView => ({ rank, node: member.node, gpus: [...member.gpus], state: member.state, pid: member.pid, reason: member.reason }),
      ),
    };
    return [{ ...entry, view }];
  });
}
