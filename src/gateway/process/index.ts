// `llmgw gateway` as a process: one, or a primary and its workers on one port, and the channel between a worker and its primary.
export { startGateway } from "./start-gateway.js";
export { startGatewayCluster, WorkerStartFailed } from "./gateway-cluster.js";
export { IpcSharedLimits, type PrimaryChannel } from "./ipc-shared-limits.js";
