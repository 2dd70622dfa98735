import { useCallback, useState } from "react";
import type { ReplicaView } from "./types.ts";

/**
 * A replica row stays listed while a dialog opened from it is open, with its
 * last view shown as stopped once it leaves the live list. The Stop dialog is
 * rendered from its row, and the live stream removes a stopped replica's row
 * as soon as the server says so: without the hold, the dialog vanished with
 * the row before it could say the change was done.
 */
export function useHeldReplicas(live: readonly ReplicaView[]): { rows: readonly ReplicaView[]; hold: (replica: ReplicaView, held: boolean) => void } {
  const [held, setHeld] = useState<ReadonlyMap<string, ReplicaView>>(new Map());
  const hold = useCallback((replica: ReplicaView, on: boolean) => {
    setHeld((before) => {
      if (on === before.has(replica.id)) return before;
      const next = new Map(before);
      if (on) next.set(replica.id, replica);
      else next.delete(replica.id);
      return next;
    });
  }, []);
  if (held.size === 0) return { rows: live, hold };
  const listed = new Set(live.map((replica) => replica.id));
  const gone = [...held.values()].filter((replica) => !listed.has(replica.id)).map((replica): ReplicaView => ({ ...replica, state: "stopped" }));
  return { rows: [...live, ...gone], hold };
}
