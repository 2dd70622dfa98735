// `llmgw gateway` as a process: one, or a primary and its workers on one port.
export { startGateway } from "./start-gateway.js";
export { startGatewayCluster, WorkerStartFailed } from "./gateway-cluster.js";
