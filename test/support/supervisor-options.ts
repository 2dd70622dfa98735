import pino from "pino";
import { defaultLogRotation } from "../../src/agent/replica-log.js";
import type { ReplicaSupervisorOptions } from "../../src/agent/replicas/supervisor-options.js";

/** A supervisor's options as the supervisor tests run it: node-a in `directory`, quick timeouts, silent, no simulation. */
export function supervisorTestOptions(directory: string, driverFor: ReplicaSupervisorOptions["driverFor"], overrides: Partial<ReplicaSupervisorOptions> = {}): ReplicaSupervisorOptions {
  return {
    nodeName: "node-a",
    dataDirectory: directory,
    driverFor,
    simulation: undefined,
    enginePaths: {},
    hubUrl: "http://127.0.0.1:1",
    hubToken: undefined,
    startupTimeoutMs: 10_000,
    stopGraceMs: 2000,
    drainTimeoutMs: 5000,
    healthPollMs: 100,
    headlessSettleMs: 300,
    logRotation: defaultLogRotation,
    terminalRetentionMs: 60_000,
    onChange: () => undefined,
    logger: pino({ level: "silent" }),
    ...overrides,
  };
}
