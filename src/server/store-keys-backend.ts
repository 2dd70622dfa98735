import type { KeysBackend } from "../gateway/index.js";
import { listGatewayKeys, type Store, addUsage } from "../store/index.js";

/** A server's gateway keys and usage, read and written in its own store (a standalone gateway goes through the admin API instead). */
export function storeKeysBackend(store: Store): KeysBackend {
  return { readKeys: () => listGatewayKeys(store.db), writeUsage: (increments) => addUsage(store.db, increments) };
}
