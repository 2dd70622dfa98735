import { setImmediate } from "node:timers/promises";
import { listCanaries, listReplicas, type Store, listModelStatus, listReplicaIntents } from "../store/index.js";
import type { FleetState } from "./observe.js";
import type { ReconcilerCatalog, ReconcilerFleet } from "./reconciler-ports.js";

/**
 * Lets the event loop run what waits (heartbeats, reads) before a pass's
 * next step. A pass over thousands of models is otherwise one long task.
 * Reads made after it may see writes made during it; a pass is
 * level-triggered, so the next one settles whatever this one missed.
 */
export const turn = () => setImmediate();

/** Where the fleet's state is read from: the store, the catalog and the fleet registry. */
export interface FleetStateSources {
  readonly store: Store;
  readonly catalog: ReconcilerCatalog;
  readonly fleet: Pick<ReconcilerFleet, "listNodes">;
}

/**
 * Reads what should run and what runs, for `observe` to take. The reads are
 * taken one at a time with a turn of the event loop between them: embedded
 * SQLite answers inside the turn, so read together at 5,000 models they held
 * the server for tens of milliseconds in one go, and every heartbeat that
 * arrived meanwhile waited.
 */
export async function readFleetState(sources: FleetStateSources): Promise<FleetState> {
  const models = await sources.catalog.list();
  await turn();
  const statuses = await listModelStatus(sources.store.db);
  await turn();
  const nodes = await sources.fleet.listNodes();
  await turn();
  const rows = await listReplicas(sources.store.db);
  await turn();
  const [intents, canaries] = await Promise.all([listReplicaIntents(sources.store.db), listCanaries(sources.store.db)]);
  return { models, statuses, nodes, rows, intents, canaries };
}
