import { type Store, insertEvents } from "../store/index.js";
import type { EventKind } from "../protocol/index.js";

/** An operator's change to a model, in the events beside what the reconciler does about it. */
export async function recordModelEvent(store: Store, model: string, kind: EventKind, message: string): Promise<void> {
  await insertEvents(store.db, [{ at: new Date().toISOString(), kind, model, replica: null, node: null, message }]);
}
