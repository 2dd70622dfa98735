import { DomainError, isDomainError } from "../errors/light.js";
import type { PersistedReplica } from "./agent-state.js";
import { isProcessAlive } from "./engine-process.js";
import type { MarkedProcess } from "./find-marked-processes.js";
import type { ReplicaSpec, ReplicaState, ReplicaStatus } from "../protocol/index.js";
import { rotateLogIfLarge } from "./replica-log.js";
import { changeEngineAdapter, type AdapterChange } from "./replicas/adapter-change.js";
import { EngineLauncher } from "./replicas/engine-launcher.js";
import { EngineProbes } from "./replicas/engine-probes.js";
import { waitReady } from "./replicas/engine-readiness.js";
import { ReplicaFiles } from "./replicas/replica-files.js";
import { describeExit, isTerminal, newReplica, now, persistedReplica, replicaStatus, withoutApiKey, type Replica } from "./replicas/replica-record.js";
import { adoptReplicas } from "./replicas/replica-adoption.js";
import { transitionRefusal } from "./replicas/replica-transitions.js";
import { ReplicaWeights } from "./replicas/replica-weights.js";
import { portsPromised, rendezvousPortNeed, reserveRendezvousPort } from "./replicas/rendezvous-port.js";
import type { ReplicaSupervisorOptions } from "./replicas/supervisor-options.js";

/**
 * Runs a node's replicas: fetch, start, wait for health, report, stop, and
 * adopt what a previous agent process left running. Every failure ends in the
 * `failed` state with a reason an operator can act on; nothing here kills an
 * engine except a stop, a failed start, or an engine that stopped answering.
 */
export class ReplicaSupervisor {
  private readonly replicas = new Map<string, Replica>();
  private closing = false;
  private readonly timers: NodeJS.Timeout[] = [];

  private readonly files: ReplicaFiles;
  private readonly weights: ReplicaWeights;
  private readonly probes: EngineProbes;
  private readonly launcher: EngineLauncher;

  constructor(private readonly options: ReplicaSupervisorOptions) {
    this.files = new ReplicaFiles(options.dataDirectory);
    this.weights = new ReplicaWeights(options);
    this.probes = new EngineProbes(options);
    this.launcher = new EngineLauncher(options, this.files);
  }

  private get probeHost(): string {
    return this.probes.probeHost;
  }

  logPath(id: string): string {
    return this.files.logPath(id);
  }

  /** Beside the log: what the agent needs to take an engine over, written before the engine starts. */
  specPath(id: string): string {
    return this.files.specPath(id);
  }

  /** Background duties: log rotation, and noticing adopted engines that exit (they are not this process's children). */
  startBackgroundTasks(watchIntervalMs = 2000, rotateIntervalMs = 10_000): void {
    this.timers.push(
      setInterval(() => void this.watchAdopted(), watchIntervalMs),
      setInterval(() => {
        for (const replica of this.replicas.values()) {
          if (replica.pid !== undefined) void rotateLogIfLarge(this.logPath(replica.spec.id), this.options.logRotation).catch(() => undefined);
        }
      }, rotateIntervalMs),
    );
    for (const timer of this.timers) timer.unref();
  }

  /**
   * Stops supervising without stopping any engine: fetches and health waits
   * are abandoned (the state file keeps them; the next agent resumes them).
   */
  async close(): Promise<void> {
    this.closing = true;
    for (const timer of this.timers) clearInterval(timer);
    for (const replica of this.replicas.values()) replica.abort.abort();
    await Promise.allSettled([...this.replicas.values()].flatMap((replica) => (replica.running ? [replica.running] : [])));
  }

  list(): ReplicaStatus[] {
    return [...this.replicas.values()].map((replica) => this.status(replica));
  }

  get(id: string): ReplicaStatus | undefined {
    const replica = this.replicas.get(id);
    return replica ? this.status(replica) : undefined;
  }

  /**
   * Loads an adapter into a ready replica's running engine, or unloads one
   * (replicas/adapter-change.ts). The engine's refusal is passed on with its words.
   */
  async changeAdapter(id: string, change: AdapterChange, apiKey: string | undefined): Promise<ReplicaStatus> {
    const replica = this.replicas.get(id);
    if (!replica) throw new DomainError("replica_not_found", `no replica ${id} on node ${this.options.nodeName}`, "List the node's replicas with GET /agent/v1/replicas.");
    await changeEngineAdapter(replica, change, apiKey, {
      nodeName: this.options.nodeName,
      probeHost: this.probeHost,
      fetchSource: (source) => this.weights.fetchSource(replica, source, false),
      logger: this.options.logger,
    });
    return this.status(replica);
  }

  /** Whether the id names a replica this agent has, or had and kept a log for. */
  has(id: string): boolean {
    return this.replicas.has(id);
  }

  private status(replica: Replica): ReplicaStatus {
    return replicaStatus(replica, this.probeHost);
  }

  /**
   * Reads each ready engine's running and waiting requests from its own
   * metrics, for the heartbeat: the server scales on them and counts them as
   * demand. An engine whose metrics do not answer within a second reports no
   * load rather than holding up the heartbeat.
   */
  async scrapeLoad(): Promise<void> {
    await Promise.all(
      [...this.replicas.values()]
        // A headless engine serves no metrics: a scrape would only wait out its timeout.
        .filter((replica) => replica.state === "ready" && replica.port !== undefined && !replica.headless)
        .map(async (replica) => {
          replica.load = await this.probes.readLoad(replica);
        }),
    );
  }

  persisted(): PersistedReplica[] {
    return [...this.replicas.values()].map((replica) => persistedReplica(replica));
  }

  /**
   * After a heartbeat delivered these statuses: terminal replicas the server
   * has now seen are forgotten (their logs stay on disk for `ctl logs`).
   */
  acknowledge(delivered: readonly ReplicaStatus[]): void {
    let changed = false;
    for (const status of delivered) {
      const replica = this.replicas.get(status.id);
      if (replica && isTerminal(replica.state) && replica.state === status.state && !replica.reported) {
        replica.reported = true;
        changed = true;
      }
    }
    const cutoff = Date.now() - this.options.terminalRetentionMs;
    for (const [id, replica] of this.replicas) {
      if (replica.reported && isTerminal(replica.state) && Date.parse(replica.since) <= cutoff) {
        this.replicas.delete(id);
        changed = true;
      }
    }
    if (changed) this.options.onChange("state");
  }

  /** Changes a replica's state as the transition table allows (replicas/replica-transitions.ts); a change it does not list is logged and not made. */
  private transition(replica: Replica, state: ReplicaState, reason?: string): void {
    const refusal = transitionRefusal(replica.state, state);
    if (refusal !== undefined) {
      this.options.logger.error({ replica: replica.spec.id, from: replica.state, to: state, ...(reason ? { reason } : {}) }, `replica-transition-refused: ${refusal}`);
      return;
    }
    replica.state = state;
    replica.since = now();
    replica.reason = reason;
    replica.reported = false;
    // The spec file serves only to adopt a running engine; an ended one must not be taken for the next.
    if (isTerminal(state) && replica.launchId !== undefined) void this.files.removeSpecFile(replica.spec.id, replica.launchId);
    this.options.logger.info({ replica: replica.spec.id, state, ...(reason ? { reason } : {}) }, `replica-${state}`);
    this.options.onChange("state");
  }

  /**
   * Starts a replica in the background and answers at once with its status
   * (fetching). Idempotent for a repeated request with the same spec, so a
   * server that retries after a lost answer does not start a second engine.
   * A gang leader whose spec leaves its rendezvous port out gets one reserved
   * here, before the answer: the answer (`rendezvous_port`) is where the
   * server learns the port to hand the other members, and a repeat answers
   * the same one.
   */
  async start(spec: ReplicaSpec): Promise<ReplicaStatus> {
    const repeated = this.repeatedStart(spec);
    if (repeated) return repeated;
    const need = rendezvousPortNeed(spec);
    const rendezvousPort = need === "reserve" ? await reserveRendezvousPort(() => portsPromised(this.replicas.values())) : need;
    // Asked again while the port was being picked: the first start stands, with its port.
    return this.repeatedStart(spec) ?? this.begin(spec, rendezvousPort);
  }

  /** The status of a live replica started with the same spec; throws when the id is taken otherwise; undefined when the id is free. */
  private repeatedStart(spec: ReplicaSpec): ReplicaStatus | undefined {
    const existing = this.replicas.get(spec.id);
    if (existing?.stopping !== undefined && !isTerminal(existing.state)) {
      // Answering with its status would look accepted; the stop then ends it and nothing starts.
      throw new DomainError(
        "replica_conflict",
        `replica ${spec.id} on node ${this.options.nodeName} is stopping; start it again when it has stopped`,
        "Wait until `llmgw ctl replicas` shows it stopped or no longer lists it, then start it again.",
      );
    }
    if (!existing || isTerminal(existing.state)) return undefined;
    // Compared without the API key: an adopted replica's spec comes from the state file, which leaves it out.
    if (JSON.stringify(withoutApiKey(existing.spec)) === JSON.stringify(withoutApiKey(spec))) return this.status(existing);
    throw new DomainError(
      "replica_conflict",
      `replica ${spec.id} already runs on node ${this.options.nodeName} (${existing.spec.model}/${existing.spec.profile}, ${existing.state}) with a different specification`,
      "Stop it first, or start the new one under another id.",
    );
  }

  private begin(spec: ReplicaSpec, rendezvousPort: number | undefined): ReplicaStatus {
    const busy = [...this.replicas.values()].find(
      (other) => !isTerminal(other.state) && other.spec.cards.some((card) => spec.cards.includes(card)),
    );
    if (busy) {
      const shared = busy.spec.cards.filter((card) => spec.cards.includes(card));
      throw new DomainError(
        "cards_busy",
        `cards ${shared.join(",")} on node ${this.options.nodeName} are used by replica ${busy.spec.id} (${busy.spec.model}, ${busy.state})`,
        "Stop that replica first, or place this one on other cards.",
      );
    }
    const replica = newReplica(spec, "fetching");
    replica.rendezvousPort = rendezvousPort;
    this.replicas.set(spec.id, replica);
    this.options.logger.info({ replica: spec.id, model: spec.model, engine: spec.engine, cards: spec.cards, ...(rendezvousPort !== undefined ? { rendezvousPort } : {}) }, "replica-fetching");
    this.options.onChange("state");
    replica.running = this.run(replica);
    return this.status(replica);
  }

  private interrupted(replica: Replica): boolean {
    return this.closing || replica.stopping !== undefined || replica.abort.signal.aborted;
  }

  private async run(replica: Replica): Promise<void> {
    try {
      // A ComfyUI replica's weights are its workflow's files, put where its loaders look; its `source` is only where the model comes from.
      const weightsPath = replica.spec.engine === "comfyui" ? await this.weights.prepareComfyui(replica) : await this.weights.fetch(replica);
      replica.weightsPath = weightsPath;
      const adapters: { name: string; path: string; scale?: number }[] = [];
      for (const adapter of replica.spec.adapters) {
        const adapterPath = await this.weights.fetchSource(replica, adapter.source, false);
        adapters.push({ name: adapter.name, path: adapterPath, ...(adapter.scale !== undefined ? { scale: adapter.scale } : {}) });
      }
      if (this.interrupted(replica)) return;
      replica.progress = undefined;
      this.transition(replica, "starting");
      const promised = portsPromised([...this.replicas.values()].filter((other) => other !== replica));
      if (replica.rendezvousPort !== undefined) promised.add(replica.rendezvousPort);
      await this.launcher.launch(replica, weightsPath, adapters, promised, (exit) => void this.exited(replica, exit));
      if (this.interrupted(replica)) return;
      await this.waitReady(replica, replica.spec.startup_timeout_ms ?? this.options.startupTimeoutMs);
      if (this.interrupted(replica)) return;
      this.transition(replica, "ready");
    } catch (error) {
      if (this.interrupted(replica)) return;
      await this.fail(replica, error);
    }
  }

  private async fail(replica: Replica, error: unknown): Promise<void> {
    const reason = isDomainError(error) ? `${error.message}. ${error.hint}` : `agent error on node ${this.options.nodeName}: ${(error as Error).message}`;
    // A failed start must not leave an engine holding the cards the next placement will use: its workers
    // may outlive the process the agent spawned.
    const outcome = await this.launcher.stopProcesses(replica);
    this.transition(replica, "failed", `${reason}${this.launcher.survivorsNote(replica, outcome)}`);
  }

  private async logTail(id: string): Promise<string> {
    return await this.files.logTail(id);
  }

  private async exited(replica: Replica, exit: { code: number | null; signal: NodeJS.Signals | null }): Promise<void> {
    replica.exit = exit;
    if (this.closing || replica.stopping !== undefined || isTerminal(replica.state)) return;
    if (replica.state === "starting") return; // waitReady reports it, with the load failure's reason
    const { spec } = replica;
    const wasState = replica.state;
    // The leader is gone, but its workers may still hold the cards: they go before the cards are called free.
    const outcome = await this.launcher.stopProcesses(replica);
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- closing, a stop or another exit may all have come while the processes stopped
    if (this.closing || replica.stopping !== undefined || isTerminal(replica.state)) return;
    // A gang's worker ends with 0 when its leader shut down in order (a drained replica): stopped, not failed.
    if ((spec.distributed?.rank ?? 0) > 0 && exit.code === 0) return this.transition(replica, "stopped", `its leader ${spec.distributed?.leader_address ?? ""} shut the replica down`);
    this.transition(
      replica,
      "failed",
      `engine ${spec.engine} for ${spec.model} on node ${this.options.nodeName} (pid ${replica.pid ?? "?"}) ${describeExit(exit)} while ${wasState}${this.launcher.survivorsNote(replica, outcome)}${await this.logTail(spec.id)}`,
    );
  }

  private async waitReady(replica: Replica, timeoutMs: number): Promise<void> {
    await waitReady(
      {
        options: this.options,
        probeHost: this.probeHost,
        interrupted: (waiting) => this.interrupted(waiting),
        portTaken: (waiting, port) => this.launcher.portTaken(waiting.spec, port),
        logTail: (id) => this.logTail(id),
      },
      replica,
      timeoutMs,
    );
  }

  /**
   * Stops a replica in the background and answers at once (draining). With
   * `drain`, the engine first finishes what it is serving (its own
   * running/waiting gauges reach zero, or the drain timeout passes), so a
   * rollout does not cut answers mid-stream.
   */
  stop(id: string, drain: boolean): ReplicaStatus {
    const replica = this.replicas.get(id);
    if (!replica) {
      throw new DomainError("replica_not_found", `no replica ${id} on node ${this.options.nodeName}`, "List the node's replicas with `llmgw ctl replicas`.");
    }
    if (isTerminal(replica.state)) {
      // Clearing a failed or stopped replica: the server has its reason; the log stays on disk.
      this.replicas.delete(id);
      this.options.onChange("state");
      return this.status(replica);
    }
    if (!replica.stopping) {
      // A headless engine has no requests of its own to finish, and no metrics to say so.
      const wasReady = replica.state === "ready" && !replica.headless;
      this.transition(replica, "draining");
      replica.stopping = this.stopNow(replica, drain && wasReady);
    }
    return this.status(replica);
  }

  private async stopNow(replica: Replica, drain: boolean): Promise<void> {
    try {
      if (drain) await this.probes.waitDrained(replica, () => this.closing);
      replica.abort.abort();
      await replica.running?.catch(() => undefined);
      // Whether or not the spawned process has exited: its workers may live on, holding the cards.
      const outcome = await this.launcher.stopProcesses(replica);
      if (outcome.killed) this.options.logger.warn({ replica: replica.spec.id }, "engine ignored SIGTERM for its grace period; killed");
      if (this.closing) return;
      if (outcome.survivors.length > 0) {
        // "stopped" would free the cards for the next placement while these still hold them.
        this.transition(replica, "failed", `stopping replica ${replica.spec.id} on node ${this.options.nodeName} did not end every process of its engine${this.launcher.survivorsNote(replica, outcome)}`);
        return;
      }
      this.transition(replica, "stopped");
    } catch (error) {
      if (!this.closing) this.transition(replica, "failed", `stopping on node ${this.options.nodeName} failed: ${(error as Error).message}`);
    }
  }

  /** Waits for every stop in progress (tests and shutdown). */
  async settled(): Promise<void> {
    await Promise.allSettled([...[...this.replicas.values()].flatMap((replica) => [replica.running, replica.stopping]), ...this.unlistedStops]);
  }

  private async watchAdopted(): Promise<void> {
    for (const replica of this.replicas.values()) {
      if (!replica.adopted || replica.pid === undefined || replica.exit !== undefined || isTerminal(replica.state)) continue;
      if (!(await isProcessAlive(replica.pid, replica.startTicks))) await this.exited(replica, { code: null, signal: null });
    }
  }

  /**
   * Takes over what a previous agent process left (replicas/replica-adoption.ts):
   * a live engine whose health answers is reported as it was, and nothing is restarted.
   */
  async adopt(previous: readonly PersistedReplica[], found: readonly MarkedProcess[] = []): Promise<void> {
    await adoptReplicas(
      {
        replicas: this.replicas,
        options: this.options,
        files: this.files,
        launcher: this.launcher,
        probeHost: () => this.probeHost,
        transition: (replica, state, reason) => this.transition(replica, state, reason),
        run: (replica) => this.run(replica),
        stopNow: (replica, drain) => this.stopNow(replica, drain),
        waitReady: (replica, timeoutMs) => this.waitReady(replica, timeoutMs),
        fail: (replica, error) => this.fail(replica, error),
        interrupted: (replica) => this.interrupted(replica),
        unlistedStop: (stop) => this.unlistedStops.push(stop),
      },
      previous,
      found,
    );
  }

  /** Stops that no replica reports (an engine with a damaged marker, a second engine for one id); settled() waits for them. */
  private readonly unlistedStops: Promise<void>[] = [];
}
