import type { ModelStatus, ModelStatusSource } from "../api/index.js";
import { type Store, listModelStatus } from "../store/index.js";
import type { PlacementForRouting } from "./build-routing-table.js";

/** The reconciler's word on each model, for the model views: placement and last failure from its status rows. */
export function modelStatusSource(store: Store, now: () => number = Date.now): ModelStatusSource {
  return async () => {
    const rows = await listModelStatus(store.db);
    return new Map(
      rows.map((row): [string, ModelStatus] => [
        row.model,
        {
          placement: row.placement_state === "placed" || row.placement_state === "unplaceable" || row.placement_state === "waiting" ? { state: row.placement_state, reason: row.placement_reason } : null,
          last_failure:
            row.last_failure !== null && row.last_failure_at !== null
              ? {
                  reason: row.last_failure,
                  at: row.last_failure_at,
                  failures: row.failures,
                  retry_at: row.backoff_until !== null && Date.parse(row.backoff_until) > now() ? row.backoff_until : null,
                }
              : null,
        },
      ]),
    );
  };
}

/** Each model's latest placement decision, for the routing table. */
export async function placementsForRouting(store: Store): Promise<Map<string, PlacementForRouting>> {
  const placements = new Map<string, PlacementForRouting>();
  for (const row of await listModelStatus(store.db)) {
    if (row.placement_state === "placed" || row.placement_state === "unplaceable" || row.placement_state === "waiting") placements.set(row.model, { state: row.placement_state, reason: row.placement_reason });
  }
  return placements;
}
