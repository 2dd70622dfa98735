// What the server wires of the routing side: canary arm counts and demand reports.
export { ArmReporter, gatewayReportId } from "./arm-reporter.js";
export { summariseSlots } from "./arm-stats.js";
export { throttleDemand } from "./throttle-demand.js";
