// The HTTP front's face: how a server puts /v1 in front of fastify on its own port.
export { gatewayServerFactory } from "./gateway-server-factory.js";
export { registerGatewayRoutes } from "./register-gateway-routes.js";
export { requestIdFrom } from "./request-id-from.js";
