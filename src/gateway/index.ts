/** The gateway folder's face: what other folders of src/ use from it. */
export { gatewayServerFactory, registerGatewayRoutes, requestIdFrom } from "./front/index.js";
export { KeysPolicy, OpenPolicy, type PrimaryChannel, type GatewayPolicy, openPolicy, type KeysBackend, httpKeysBackend, IpcSharedLimits } from "./policy/index.js";
export { startGateway, startGatewayCluster, WorkerStartFailed } from "./process/index.js";
export { Gateway, type GatewayLog } from "./request/index.js";
export { ArmReporter, gatewayReportId, summariseSlots, throttleDemand } from "./routing/index.js";
