import { GatewayRefusal } from "../wire/gateway-refusal.js";
import type { GatewayPolicy } from "./gateway-policy.js";

/**
 * `auth: keys` in a build without gateway keys: no key can match, so every
 * /v1 request is refused 401, saying how to open the gateway for a loopback
 * demo. Failing closed keeps a server that meant to need keys from serving
 * anyone who reaches its port.
 */
export const closedPolicy: GatewayPolicy = {
  authenticate: () => {
    throw new GatewayRefusal(
      401,
      "authentication_error",
      "invalid_api_key",
      "this gateway needs a gateway API key, and no key is valid here; for a demo on loopback, set `gateway: { auth: open }` in server.yaml",
    );
  },
  admit: () => undefined,
  record: () => undefined,
};
