import type { KeysBackend } from "../gateway/policy/index.js";
import { listGatewayKeys } from "../store/gateway-key-rows.js";
import type { Store } from "../store/open-store.js";
import { addUsage } from "../store/usage-rows.js";

/** A server's gateway keys and usage, read and written in its own store (a standalone gateway goes through the admin API instead). */
export function storeKeysBackend(store: Store): KeysBackend {
  return { readKeys: () => listGatewayKeys(store.db), writeUsage: (increments) => addUsage(store.db, increments) };
}
