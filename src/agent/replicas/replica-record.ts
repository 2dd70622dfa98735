import type { PersistedReplica } from "../agent-state.js";
import { type ReplicaProgress, type ReplicaSpec, type ReplicaState, type ReplicaStatus, terminalReplicaStates } from "../../protocol/for-agent.js";

/** What the supervisor knows of one replica; the views below read it without side effects. */
export interface Replica {
  spec: ReplicaSpec;
  state: ReplicaState;
  since: string;
  progress: ReplicaProgress | undefined;
  port: number | undefined;
  pid: number | undefined;
  processGroup: number | undefined;
  startTicks: string | undefined;
  /** The marker this engine process carries (LLMGW_LAUNCH_ID); undefined for one started before engines were marked. */
  launchId: string | undefined;
  healthPath: string | undefined;
  /** The engine serves nothing to probe (its driver gave no health path): ready by its process, no endpoint, no metrics. */
  headless: boolean;
  /** A gang leader's rendezvous port: reserved when the start was accepted, before any engine runs, and kept through restarts. */
  rendezvousPort: number | undefined;
  metricsPath: string | undefined;
  weightsPath: string | undefined;
  reason: string | undefined;
  adopted: boolean;
  reported: boolean;
  /** Aborts the fetch and the health wait: on stop, and when the agent closes. */
  abort: AbortController;
  /** The fetch-start-wait sequence; a stop awaits it so it never races a spawn. */
  running: Promise<void> | undefined;
  stopping: Promise<void> | undefined;
  /** Set when the engine's process is seen gone. */
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  /** Requests the engine reported running and waiting at the last scrape. */
  load: { running: number; waiting: number } | undefined;
}

export function now(): string {
  return new Date().toISOString();
}

export function isTerminal(state: ReplicaState): boolean {
  return terminalReplicaStates.includes(state);
}

export function withoutApiKey(spec: ReplicaSpec): ReplicaSpec {
  const { api_key: _apiKey, ...rest } = spec;
  return rest;
}

export function newReplica(spec: ReplicaSpec, state: ReplicaState): Replica {
  return {
    spec,
    state,
    since: now(),
    progress: undefined,
    port: undefined,
    pid: undefined,
    processGroup: undefined,
    startTicks: undefined,
    launchId: undefined,
    healthPath: undefined,
    headless: false,
    rendezvousPort: undefined,
    metricsPath: undefined,
    weightsPath: undefined,
    reason: undefined,
    adopted: false,
    reported: false,
    abort: new AbortController(),
    running: undefined,
    stopping: undefined,
    exit: undefined,
    load: undefined,
  };
}

/** The replica as the agent's API and heartbeat report it; `probeHost` is where the agent reaches its engines. */
export function replicaStatus(replica: Replica, probeHost: string): ReplicaStatus {
  const { spec } = replica;
  const live = !isTerminal(replica.state);
  return {
    id: spec.id,
    model: spec.model,
    profile: spec.profile,
    engine: spec.engine,
    cards: spec.cards,
    state: replica.state,
    ...(replica.state === "fetching" && replica.progress ? { progress: replica.progress } : {}),
    // A headless worker has a port on its command line but serves nothing there: an endpoint would send requests nowhere.
    ...(live && !replica.headless && replica.port !== undefined && replica.pid !== undefined ? { endpoint: `http://${probeHost}:${replica.port}` } : {}),
    ...(live && replica.pid !== undefined ? { pid: replica.pid } : {}),
    ...(replica.reason !== undefined ? { reason: replica.reason } : {}),
    ...(replica.adopted ? { adopted: true } : {}),
    ...(replica.state === "ready" && replica.load ? { load: replica.load } : {}),
    since: replica.since,
    ...(replica.rendezvousPort !== undefined ? { rendezvous_port: replica.rendezvousPort } : {}),
  };
}

/** The replica as the state file keeps it. */
export function persistedReplica(replica: Replica): PersistedReplica {
  return {
    // The engine's API key stays out of the state file: an adopted engine already has it, and the
    // server holds it for the gateways; a copy on disk would only be one more place to leak from.
    spec: withoutApiKey(replica.spec),
    state: replica.state,
    since: replica.since,
    ...(replica.port !== undefined ? { port: replica.port } : {}),
    ...(replica.pid !== undefined ? { pid: replica.pid } : {}),
    ...(replica.processGroup !== undefined ? { process_group: replica.processGroup } : {}),
    ...(replica.startTicks !== undefined ? { start_ticks: replica.startTicks } : {}),
    ...(replica.launchId !== undefined ? { launch_id: replica.launchId } : {}),
    ...(replica.healthPath !== undefined ? { health_path: replica.healthPath } : {}),
    ...(replica.headless ? { headless: true } : {}),
    ...(replica.rendezvousPort !== undefined ? { rendezvous_port: replica.rendezvousPort } : {}),
    ...(replica.metricsPath !== undefined ? { metrics_path: replica.metricsPath } : {}),
    ...(replica.weightsPath !== undefined ? { weights_path: replica.weightsPath } : {}),
    ...(replica.reason !== undefined ? { reason: replica.reason } : {}),
    ...(replica.reported ? { reported: true } : {}),
  };
}

export function describeExit(exit: { code: number | null; signal: NodeJS.Signals | null }): string {
  return exit.signal ? `was killed by ${exit.signal}` : exit.code === null ? "exited" : `exited with code ${exit.code}`;
}
