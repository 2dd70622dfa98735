import type { GatewayCaller, GatewayPolicy } from "./gateway-policy.js";

const anyone: GatewayCaller = Object.freeze({ key: null, allowedModels: null });

/**
 * `gateway: { auth: open }`: every caller may use every model, with no limit
 * and no usage kept per key. Meant for a demo on loopback; the server warns
 * when it listens anywhere else.
 */
export const openPolicy: GatewayPolicy = {
  authenticate: () => anyone,
  admit: () => undefined,
  record: () => undefined,
};
