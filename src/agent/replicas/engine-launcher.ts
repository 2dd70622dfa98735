import { distributedLaunch } from "./distributed-launch.js";
import { randomBytes } from "node:crypto";
import { appendFile, mkdir } from "node:fs/promises";
import { redactArgs } from "../../catalog/for-agent.js";
import { DomainError } from "../../errors/light.js";
import { writePrivateFile } from "../../files/index.js";
import type { ReplicaSpec } from "../../protocol/index.js";
import type { PersistedReplica } from "../agent-state.js";
import { markerEnvironment, type EngineMarker } from "../engine-marker.js";
import { findEnginePort, isPortFree, isProcessAlive, processStartTicks, spawnEngine } from "../engine-process.js";
import { stopEngine, type StopOutcome } from "../stop-engine.js";
import { engineCommandLine, engineInheritedEnvironment } from "./engine-command-line.js";
import type { ReplicaFiles } from "./replica-files.js";
import { now, type Replica } from "./replica-record.js";
import type { ReplicaSupervisorOptions } from "./supervisor-options.js";

/** Starts a replica's engine process (marked, logged, its spec file written first) and stops every process of it. */
export class EngineLauncher {
  constructor(
    private readonly options: ReplicaSupervisorOptions,
    private readonly files: ReplicaFiles,
  ) {}

  /** `promised`: ports this agent holds for other replicas and this one's rendezvous, which the engine's port must not take. */
  async launch(
    replica: Replica,
    weightsPath: string,
    adapters: { name: string; path: string; scale?: number }[],
    promised: ReadonlySet<number>,
    onExit: (exit: { code: number | null; signal: NodeJS.Signals | null }) => void,
  ): Promise<void> {
    const { spec } = replica;
    const driver = this.options.driverFor(spec.engine);
    const port = spec.port ?? (await findEnginePort(Math.random, undefined, promised));
    if (!(await isPortFree(port))) throw this.portTaken(spec, port);
    await this.checkRendezvousPort(replica, port);
    const launch = driver.build({
      modelName: spec.model,
      weightsPath,
      cards: spec.cards,
      port,
      host: this.options.engineHost,
      apiKey: spec.api_key,
      context: spec.context,
      slots: spec.slots,
      cpuCores: spec.cpu_cores,
      gpuMemoryUtilization: spec.gpu_memory_utilization,
      quantization: spec.quantization,
      adapters,
      extraArgs: spec.args,
      extraEnv: spec.env,
      // The simulated engine needs no checkout, but ComfyUI's driver refuses to build without one.
      // ComfyUI's is the checkout prepareComfyui found or installed.
      enginePath: spec.engine === "comfyui" ? weightsPath : this.options.enginePaths[spec.engine],
      ...distributedLaunch(spec.distributed, replica.rendezvousPort),
    });
    const { argv, env } = await engineCommandLine(this.options, spec, driver, launch);
    await mkdir(this.files.logsDirectory, { recursive: true, mode: 0o700 });
    const logPath = this.files.logPath(spec.id);
    const launchId = randomBytes(12).toString("hex");
    // Known before the spawn, so a failed start still removes this launch's spec file.
    replica.launchId = launchId;
    const marker: EngineMarker = {
      agentDirectory: this.options.dataDirectory,
      node: this.options.nodeName,
      replicaId: spec.id,
      launchId,
      model: spec.model,
      profile: spec.profile,
      engine: spec.engine,
      cards: spec.cards,
    };
    // Written before the engine starts, so no moment exists where an engine runs that the agent could not adopt.
    const specRecord: PersistedReplica = {
      spec,
      state: "starting",
      since: now(),
      port,
      launch_id: launchId,
      ...(launch.healthPath !== undefined ? { health_path: launch.healthPath } : { headless: true }),
      ...(replica.rendezvousPort !== undefined ? { rendezvous_port: replica.rendezvousPort } : {}),
      metrics_path: launch.metricsPath,
      weights_path: weightsPath,
    };
    await writePrivateFile(this.files.specPath(spec.id), `${JSON.stringify(specRecord, null, 2)}\n`);
    // Only argv goes in the log, and masked: the environment may carry tokens, and a profile's args
    // may carry an --api-key or a mirror URL with a password, while a read-only token can read this log
    // (S9: no secret in a log). The engine gets the real argv.
    await appendFile(logPath, `--- ${now()} llmgw agent on ${this.options.nodeName} starts ${spec.engine}${gangPlace(spec, replica.rendezvousPort)} for ${spec.model}: ${redactArgs(argv).join(" ")}\n`, { mode: 0o600 });
    let spawned;
    try {
      // The marker comes last: a profile's env must not be able to pass its engine off as another's.
      spawned = await spawnEngine(argv, { ...engineInheritedEnvironment(), ...env, ...markerEnvironment(marker) }, logPath);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT" || (error as NodeJS.ErrnoException).code === "EACCES") {
        throw new DomainError(
          "engine_missing",
          `engine ${spec.engine} could not be started on node ${this.options.nodeName}: ${argv[0] ?? ""} ${(error as NodeJS.ErrnoException).code === "EACCES" ? "is not executable" : "does not exist"}`,
          `Install ${spec.engine} on ${this.options.nodeName}, or place the replica on a node whose inventory lists it.`,
        );
      }
      throw error;
    }
    replica.pid = spawned.pid;
    replica.processGroup = spawned.processGroup;
    replica.port = port;
    replica.healthPath = launch.healthPath;
    replica.headless = launch.healthPath === undefined;
    replica.metricsPath = launch.metricsPath;
    replica.startTicks = await processStartTicks(spawned.pid);
    this.options.logger.info({ replica: spec.id, pid: spawned.pid, port }, "replica-spawned");
    this.options.onChange("state");
    void spawned.exited.then(onExit);
  }

  /**
   * A leader's rendezvous port must be free when its engine starts, and apart
   * from its API port: the engine fails on either minutes into its load, and
   * its workers then wait at a port nobody serves.
   */
  private async checkRendezvousPort(replica: Replica, enginePort: number): Promise<void> {
    const { spec } = replica;
    const rendezvous = spec.distributed?.rank === 0 ? replica.rendezvousPort : undefined;
    if (rendezvous === undefined) return;
    if (rendezvous === enginePort) {
      throw new DomainError(
        "port_taken",
        `replica ${spec.id} on node ${this.options.nodeName} was given port ${enginePort} for both its engine's API and its rendezvous`,
        "Leave the replica's port out (the agent picks a free one), or give it one apart from the rendezvous port.",
      );
    }
    if (!(await isPortFree(rendezvous))) {
      throw new DomainError(
        "port_taken",
        `rendezvous port ${rendezvous} on node ${this.options.nodeName} is already taken by another process, so ${spec.engine} cannot lead replica ${spec.id} on it`,
        "Free that port, or stop the replica and start it again: the agent then reserves another free port and the server hands it to the members.",
      );
    }
  }

  portTaken(spec: ReplicaSpec, port: number): DomainError {
    return new DomainError(
      "port_taken",
      `port ${port} on node ${this.options.nodeName} is already taken by another process, so ${spec.engine} cannot serve ${spec.model} on it`,
      spec.port !== undefined ? "Leave the replica's port out (the agent picks a free one), or free that port." : "Start the replica again; the agent picks another free port.",
    );
  }

  /** Stops every process of the replica's engine (its group, and whatever carries its marker); answers once they are gone. */
  async stopProcesses(replica: Replica): Promise<StopOutcome> {
    // An unmarked engine's group only while its leader runs: after that, the group id may be a stranger's.
    const groupIsKnown = replica.launchId !== undefined || (replica.pid !== undefined && (await isProcessAlive(replica.pid, replica.startTicks)));
    return await stopEngine(
      { processGroup: groupIsKnown ? replica.processGroup : undefined, launchId: replica.launchId, agentDirectory: this.options.dataDirectory },
      replica.spec.stop_grace_ms ?? this.options.stopGraceMs,
    );
  }

  survivorsNote(replica: Replica, outcome: StopOutcome): string {
    if (outcome.survivors.length === 0) return "";
    const cards = replica.spec.cards.length > 0 ? `cards ${replica.spec.cards.join(",")}` : "its memory";
    return `; processes ${outcome.survivors.join(", ")} of its engine are still alive after SIGKILL and may hold ${cards}: stop them by hand (kill -9) before that is used again`;
  }
}

/** A gang member's place, for its log's start line: " (rank 1 of 2 of replica X, leader A:P)"; empty for a replica on one node. */
export function gangPlace(spec: ReplicaSpec, rendezvousPort?: number): string {
  const distributed = spec.distributed;
  if (distributed === undefined) return "";
  const port = distributed.port ?? rendezvousPort;
  const leader = distributed.leader_address.includes(":") ? `[${distributed.leader_address}]` : distributed.leader_address;
  return ` (rank ${distributed.rank} of ${distributed.nodes} of replica ${distributed.replica ?? spec.id}, leader ${leader}:${port ?? "?"})`;
}
