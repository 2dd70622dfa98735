/** The gateway folder's face: what other folders of src/ use from it. */
export { gatewayServerFactory, registerGatewayRoutes, requestIdFrom } from "./front/index.js";
export { KeysPolicy, OpenPolicy, type GatewayPolicy, openPolicy, type KeysBackend, httpKeysBackend } from "./policy/index.js";
export { startGateway, startGatewayCluster, WorkerStartFailed, IpcSharedLimits, type PrimaryChannel } from "./process/index.js";
export { Gateway, type GatewayLog } from "./request/index.js";
export { ArmReporter, gatewayReportId, summariseSlots, throttleDemand } from "./routing/index.js";
