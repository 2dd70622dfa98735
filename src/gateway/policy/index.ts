// Who may ask what, how much: the policies a server or `llmgw gateway` hands the gateway.
export type { GatewayPolicy } from "./gateway-policy.js";
export { openPolicy, OpenPolicy, anonymousCaller } from "./open-policy.js";
export { KeysPolicy } from "./keys-policy.js";
export { httpKeysBackend, type KeysBackend } from "./keys-backend.js";
