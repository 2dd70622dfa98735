import { replicaSpecSchema, type ReplicaState } from "../../protocol/for-agent.js";
import type { PersistedReplica } from "../agent-state.js";
import { isProcessAlive, probeHealth } from "../engine-process.js";
import type { MarkedProcess } from "../find-marked-processes.js";
import { orphanEngines, type FoundEngine } from "../orphan-engines.js";
import { stopEngine } from "../stop-engine.js";
import type { EngineLauncher } from "./engine-launcher.js";
import type { ReplicaFiles } from "./replica-files.js";
import { isTerminal, newReplica, now, type Replica } from "./replica-record.js";
import type { ReplicaSupervisorOptions } from "./supervisor-options.js";

/** What adoption uses of the supervisor: its replicas, and the steps a replica's life is made of. */
export interface AdoptionSteps {
  readonly replicas: Map<string, Replica>;
  readonly options: ReplicaSupervisorOptions;
  readonly files: ReplicaFiles;
  readonly launcher: EngineLauncher;
  readonly probeHost: () => string;
  transition(replica: Replica, state: ReplicaState, reason?: string): void;
  /** Fetch, start and wait for health, in the background. */
  run(replica: Replica): Promise<void>;
  stopNow(replica: Replica, drain: boolean): Promise<void>;
  waitReady(replica: Replica, timeoutMs: number): Promise<void>;
  fail(replica: Replica, error: unknown): Promise<void>;
  interrupted(replica: Replica): boolean;
  /** A stop that no replica reports (an engine with a damaged marker, a second engine for one id); settled() waits for it. */
  unlistedStop(stop: Promise<void>): void;
}

/**
 * Takes over what a previous agent process left: a live engine whose health
 * answers is reported as it was, and nothing is restarted. A fetch that was
 * cut resumes; an engine that died meanwhile is failed with its log tail; a
 * stop that was in progress is finished; an engine found by its marker with
 * no record is adopted from its spec file, or stopped.
 */
export async function adoptReplicas(steps: AdoptionSteps, previous: readonly PersistedReplica[], found: readonly MarkedProcess[]): Promise<void> {
  const live = previous.filter((record) => !isTerminal(record.state) && record.pid !== undefined);
  const orphans = orphanEngines(found, {
    launchIds: new Set(live.flatMap((record) => (record.launch_id !== undefined ? [record.launch_id] : []))),
    processGroups: new Set(live.flatMap((record) => (record.process_group !== undefined ? [record.process_group] : []))),
  });
  // A record cut between the engine's start and the state file's next write names no pid, but its engine
  // runs: it is adopted from what it carries rather than started a second time beside itself.
  const running = new Set(orphans.flatMap((engine) => (engine.marker ? [engine.marker.replicaId] : [])));
  const records = previous.filter((record) => !(record.pid === undefined && !isTerminal(record.state) && running.has(record.spec.id)));
  await Promise.all(records.map((record) => adoptOne(steps, record)));
  await Promise.all(orphans.map((engine) => adoptOrphan(steps, engine)));
}

/**
 * An engine found by its marker that no record names. Adopted when its spec
 * file (beside its log) belongs to it and its process runs; otherwise
 * stopped, and listed as draining until it is gone, so the server sees
 * what holds those cards and places nothing there meanwhile.
 */
async function adoptOrphan(steps: AdoptionSteps, engine: FoundEngine): Promise<void> {
  const { options } = steps;
  const { marker, leader } = engine;
  const pids = engine.processes.map((process) => process.pid).join(", ");
  const existing = marker ? steps.replicas.get(marker.replicaId) : undefined;
  if (!marker || (existing && !isTerminal(existing.state))) {
    options.logger.warn({ pids, replica: marker?.replicaId }, marker ? "a second engine for a running replica found; stopping it" : "engine processes with a damaged marker found; stopping them");
    const target = { processGroup: leader?.processGroup, launchId: marker?.launchId, agentDirectory: options.dataDirectory };
    steps.unlistedStop(
      stopEngine(target, options.stopGraceMs).then(
        (outcome) => {
          if (outcome.survivors.length > 0) options.logger.error({ survivors: outcome.survivors }, "orphan engine processes survived SIGKILL");
        },
        () => undefined,
      ),
    );
    return;
  }
  const record = leader ? await steps.files.readSpecFile(marker) : undefined;
  if (record && leader) {
    options.logger.info({ replica: marker.replicaId, pid: leader.pid }, "engine found without its state record; adopting it from its spec file");
    await adoptOne(steps, { ...record, state: "starting", since: now(), pid: leader.pid, process_group: leader.processGroup, start_ticks: leader.startTicks, launch_id: marker.launchId });
    return;
  }
  const spec = replicaSpecSchema.parse({
    id: marker.replicaId,
    model: marker.model,
    profile: marker.profile,
    engine: marker.engine,
    source: "unknown: the engine was found running without its record",
    cards: marker.cards,
  });
  const replica = newReplica(spec, "draining");
  Object.assign(replica, {
    pid: leader?.pid,
    processGroup: leader?.processGroup ?? engine.processes[0]?.processGroup,
    startTicks: leader?.startTicks,
    launchId: marker.launchId,
  });
  steps.replicas.set(spec.id, replica);
  const missing = leader ? `its spec file ${steps.files.specPath(spec.id)} is missing or not its own` : "the process the agent started is gone and only its workers remain";
  steps.transition(
    replica,
    "draining",
    `engine ${spec.engine} for ${spec.model} on cards ${spec.cards.join(",") || "none"} of node ${options.nodeName} (processes ${pids}) was running without a record the agent could adopt (${missing}); stopping it so its cards are free`,
  );
  replica.stopping = steps.stopNow(replica, false);
}

async function adoptOne(steps: AdoptionSteps, record: PersistedReplica): Promise<void> {
  const { options, launcher } = steps;
  const replica = newReplica(record.spec, record.state);
  Object.assign(replica, {
    since: record.since,
    port: record.port,
    pid: record.pid,
    processGroup: record.process_group,
    startTicks: record.start_ticks,
    launchId: record.launch_id,
    healthPath: record.health_path,
    headless: record.headless ?? false,
    rendezvousPort: record.rendezvous_port,
    metricsPath: record.metrics_path,
    weightsPath: record.weights_path,
    reason: record.reason,
    reported: record.reported ?? false,
    progress: record.progress,
  });
  steps.replicas.set(record.spec.id, replica);
  if (isTerminal(record.state)) return;
  if (record.pid === undefined) {
    // Cut before an engine existed: fetch again (resuming partial files) and start it. A record, not a
    // transition: whatever state the file says, nothing of this replica runs yet.
    replica.state = "fetching";
    replica.running = steps.run(replica);
    return;
  }
  const { spec } = replica;
  if (!(await isProcessAlive(record.pid, record.start_ticks))) {
    // Not adopted: there is nothing to adopt. Workers it left behind still hold its cards, so they go first.
    replica.exit = { code: null, signal: null };
    const outcome = await launcher.stopProcesses(replica);
    steps.transition(
      replica,
      "failed",
      `engine ${spec.engine} for ${spec.model} on node ${options.nodeName} (pid ${record.pid}) was no longer running when the agent restarted${launcher.survivorsNote(replica, outcome)}${await steps.files.logTail(spec.id)}`,
    );
    return;
  }
  replica.adopted = true;
  if (record.state === "draining") {
    replica.stopping = steps.stopNow(replica, false);
    return;
  }
  // A headless engine serves nothing to ask: its process running, with its marker, is all there is to know.
  const healthy = replica.headless || (await probeHealth(`http://${steps.probeHost()}:${record.port ?? 0}${record.health_path ?? "/health"}`));
  options.logger.info({ replica: spec.id, pid: record.pid, healthy, ...(replica.headless ? { headless: true } : {}) }, "replica-adopted");
  if (healthy) {
    if (record.state !== "ready") steps.transition(replica, "ready");
    return;
  }
  // Alive but not answering (still loading, or busy): wait for it as for a start, and fail it only past the deadline.
  replica.running = (async () => {
    try {
      await steps.waitReady(replica, spec.startup_timeout_ms ?? options.startupTimeoutMs);
      if (!steps.interrupted(replica) && replica.state !== "ready") steps.transition(replica, "ready");
    } catch (error) {
      if (!steps.interrupted(replica)) await steps.fail(replica, error);
    }
  })();
}
