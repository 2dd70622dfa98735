// The request path's face for the server that embeds a gateway.
export { Gateway, type GatewayOptions } from "./gateway.js";
export type { GatewayEndpoint, GatewayExchange, GatewayLog } from "../wire/gateway-exchange.js";
