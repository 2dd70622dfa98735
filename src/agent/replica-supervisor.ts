import { randomBytes } from "node:crypto";
import { appendFile, mkdir, readFile, rm } from "node:fs/promises";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import { request } from "undici";
import type { EngineName } from "../catalog/schema.js";
import type { EngineDriver, EngineLaunch } from "../engines/driver.js";
import { DomainError, isDomainError } from "../errors/domain-error.js";
import { persistedReplicaSchema, type PersistedReplica } from "./agent-state.js";
import { findFreePort, isPortFree, isProcessAlive, probeHealth, processStartTicks, spawnEngine } from "./engine-process.js";
import { markerEnvironment, markerVariables, type EngineMarker } from "./engine-marker.js";
import type { MarkedProcess } from "./find-marked-processes.js";
import { orphanEngines, type FoundEngine } from "./orphan-engines.js";
import { stopEngine, type StopOutcome } from "./stop-engine.js";
import { writePrivateFile } from "../files/private-files.js";
import { findProgram, type EnginePaths } from "./inventory.js";
import type { ReplicaProgress, ReplicaSpec, ReplicaState, ReplicaStatus } from "../protocol/agent-protocol.js";
import { replicaSpecSchema, terminalReplicaStates } from "../protocol/agent-protocol.js";
import { redactArgs } from "../catalog/redact.js";
import { readLogTail, rotateLogIfLarge, type LogRotation } from "./replica-log.js";
import { fetchWeights } from "./weights-fetcher.js";
import { prepareComfyui, type ComfyuiSetup } from "./prepare-comfyui.js";
import { parseWeightsSource } from "../catalog/weights-source.js";
import { cacheLocation } from "./weights-source.js";
import { runtimeAdapterEndpoints } from "../engines/runtime-adapters.js";

export interface SimulationSettings {
  /** How to run `llmgw`: [node, ...flags, path to bin/llmgw.js]; `sim-engine ...` is appended. */
  readonly llmgwCommand: readonly string[];
  /** Fetch remote sources for real; otherwise the weights are pretended and the download skipped. */
  readonly fetch: boolean;
  /** The class of a pretend card, passed to the simulated engine for its timing. */
  readonly cardClass: (index: number) => string | undefined;
}

export interface ReplicaSupervisorOptions {
  readonly nodeName: string;
  /** An absolute path without symbolic links: engines carry it as their agent's identity. */
  readonly dataDirectory: string;
  readonly driverFor: (engine: EngineName) => EngineDriver;
  readonly simulation: SimulationSettings | undefined;
  readonly enginePaths: EnginePaths;
  /** Where ComfyUI is on this node and how to install it; a ComfyUI replica is refused without it. */
  readonly comfyui?: ComfyuiSetup | undefined;
  /** Called when something the inventory reports changed on the node (ComfyUI installed). */
  readonly onInventoryChanged?: (() => void) | undefined;
  /**
   * Where engines listen (--engine-host): 127.0.0.1 keeps them on this
   * machine; 0.0.0.0 or the node's address lets gateways elsewhere reach them,
   * which is why each engine then has its own API key.
   */
  readonly engineHost?: string | undefined;
  readonly hubUrl: string;
  readonly hubToken: string | undefined;
  readonly startupTimeoutMs: number;
  readonly stopGraceMs: number;
  readonly drainTimeoutMs: number;
  readonly healthPollMs: number;
  readonly logRotation: LogRotation;
  /**
   * How long a stopped or failed replica stays listed after the server has
   * seen it: long enough for `GET /agent/v1/replicas` to explain a failure,
   * short enough that ids do not pile up.
   */
  readonly terminalRetentionMs: number;
  /** A state change to persist and to report early; progress changes are not persisted. */
  readonly onChange: (kind: "state" | "progress") => void;
  readonly logger: Logger;
}

interface Replica {
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

const logTailLines = 20;

/**
 * The agent's own secrets, left out of an engine's environment. An engine has
 * no use for them, and it runs code that came with the model
 * (trust_remote_code, custom nodes): a join token in its environment is one
 * `env` or crash dump away from a log, and lets anyone join machines to the
 * fleet.
 *
 * This keeps them out of the engine's own environment only. It is no barrier
 * against code in the engine that looks for them: the engine runs as the
 * agent's uid, so it can read /proc/<agent pid>/environ (which keeps the
 * agent's starting environment even after `llmgw agent` deletes the join
 * token from process.env) and the node credential in the agent's state file.
 * That protection needs the engine under another uid, and a join token that
 * expires.
 */
const agentSecrets = ["LLMGW_JOIN_TOKEN", "LLMGW_TOKEN"] as const;

function engineInheritedEnvironment(): NodeJS.ProcessEnv {
  const environment = { ...process.env };
  // A marker the agent inherited (started from an engine's shell) would make its engines look like another's.
  for (const name of [...agentSecrets, ...Object.values(markerVariables)]) delete environment[name];
  return environment;
}

function now(): string {
  return new Date().toISOString();
}

function isTerminal(state: ReplicaState): boolean {
  return terminalReplicaStates.includes(state);
}

/**
 * Runs a node's replicas: fetch, start, wait for health, report, stop, and
 * adopt what a previous agent process left running. Every failure ends in the
 * `failed` state with a reason an operator can act on; nothing here kills an
 * engine except a stop, a failed start, or an engine that stopped answering.
 */
function withoutApiKey(spec: ReplicaSpec): ReplicaSpec {
  const { api_key: _apiKey, ...rest } = spec;
  return rest;
}

export class ReplicaSupervisor {
  private readonly replicas = new Map<string, Replica>();
  private closing = false;
  private readonly timers: NodeJS.Timeout[] = [];

  constructor(private readonly options: ReplicaSupervisorOptions) {}

  /** Where this agent reaches its own engines: a wildcard listen address is reached on loopback. */
  private get probeHost(): string {
    const host = this.options.engineHost ?? "127.0.0.1";
    if (host === "0.0.0.0" || host === "::" || host === "") return "127.0.0.1";
    return host.includes(":") ? `[${host}]` : host;
  }

  private get logsDirectory(): string {
    return path.join(this.options.dataDirectory, "logs");
  }

  private get weightsDirectory(): string {
    return path.join(this.options.dataDirectory, "weights");
  }

  logPath(id: string): string {
    return path.join(this.logsDirectory, `${id}.log`);
  }

  /**
   * Beside the log: what the agent needs to take an engine over (its spec,
   * port, health path), written before the engine starts. It lets an agent
   * that lost its state file adopt the engines it finds by their marker.
   * Readable by the agent's user only: the spec carries the profile's
   * environment.
   */
  specPath(id: string): string {
    return path.join(this.logsDirectory, `${id}.spec.json`);
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
    await Promise.allSettled([...this.replicas.values()].map((replica) => replica.running));
  }

  list(): ReplicaStatus[] {
    return [...this.replicas.values()].map((replica) => this.status(replica));
  }

  get(id: string): ReplicaStatus | undefined {
    const replica = this.replicas.get(id);
    return replica ? this.status(replica) : undefined;
  }

  /**
   * Loads an adapter into a ready replica's running engine (fetched into the
   * weights cache first, as at start), or unloads one, through the engine's
   * own runtime endpoint. The engine's refusal is passed on with its words.
   */
  async changeAdapter(
    id: string,
    change: { readonly action: "load"; readonly adapter: { readonly name: string; readonly source: string } } | { readonly action: "unload"; readonly name: string },
    apiKey: string | undefined,
  ): Promise<ReplicaStatus> {
    const replica = this.replicas.get(id);
    if (!replica) throw new DomainError("replica_not_found", `no replica ${id} on node ${this.options.nodeName}`, "List the node's replicas with GET /agent/v1/replicas.");
    const name = change.action === "load" ? change.adapter.name : change.name;
    if (replica.state !== "ready" || replica.port === undefined) {
      throw new DomainError("replica_conflict", `replica ${id} on node ${this.options.nodeName} is ${replica.state}, not ready: adapter ${name} cannot be changed in its engine`, "Wait until it is ready, or restart the model so its new replicas start with the adapter.");
    }
    const endpoints = runtimeAdapterEndpoints(replica.spec.engine);
    // Asked before anything is fetched: an engine without runtime loading is refused at once.
    if (endpoints === undefined) {
      throw new DomainError("adapter_load_failed", `replica ${id} runs ${replica.spec.engine}, which loads adapters only at start`, "Restart the model's replicas so they start with the adapters of the catalog.");
    }
    const call = change.action === "load" ? endpoints.load(name, await this.fetchSource(replica, change.adapter.source, false)) : endpoints.unload(name);
    const key = apiKey ?? replica.spec.api_key;
    let answer: { status: number; text: string };
    try {
      const response = await request(`http://${this.probeHost}:${replica.port}${call.path}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(key !== undefined ? { authorization: `Bearer ${key}` } : {}) },
        body: JSON.stringify(call.body),
        // Loading reads the adapter's weights into the cards' memory: seconds for a large one.
        headersTimeout: 120_000,
        bodyTimeout: 120_000,
      });
      answer = { status: response.statusCode, text: await response.body.text() };
    } catch (error) {
      throw new DomainError("adapter_load_failed", `replica ${id} on node ${this.options.nodeName}: its engine did not answer the ${change.action} of adapter ${name} (${(error as Error).message})`, "See the replica's log (`llmgw ctl logs`).");
    }
    if (answer.status >= 300) {
      throw new DomainError(
        "adapter_load_failed",
        `replica ${id} on node ${this.options.nodeName}: its ${replica.spec.engine} engine refused to ${change.action} adapter ${name} (${answer.status}: ${answer.text.slice(0, 300)})`,
        "See the replica's log (`llmgw ctl logs`); for vLLM, check that the adapter's rank is within --max-lora-rank.",
      );
    }
    this.options.logger.info({ replica: id, adapter: name }, change.action === "load" ? "adapter-loaded" : "adapter-unloaded");
    return this.status(replica);
  }

  /** Whether the id names a replica this agent has, or had and kept a log for. */
  has(id: string): boolean {
    return this.replicas.has(id);
  }

  private status(replica: Replica): ReplicaStatus {
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
      ...(live && replica.port !== undefined && replica.pid !== undefined ? { endpoint: `http://${this.probeHost}:${replica.port}` } : {}),
      ...(live && replica.pid !== undefined ? { pid: replica.pid } : {}),
      ...(replica.reason !== undefined ? { reason: replica.reason } : {}),
      ...(replica.adopted ? { adopted: true } : {}),
      ...(replica.state === "ready" && replica.load ? { load: replica.load } : {}),
      since: replica.since,
    };
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
        .filter((replica) => replica.state === "ready" && replica.port !== undefined)
        .map(async (replica) => {
          try {
            const response = await request(`http://127.0.0.1:${replica.port ?? 0}${replica.metricsPath ?? "/metrics"}`, { signal: AbortSignal.timeout(1000) });
            const text = await response.body.text();
            const metrics = response.statusCode === 200 ? this.options.driverFor(replica.spec.engine).parseMetrics(text) : undefined;
            replica.load = metrics?.requestsRunning !== undefined ? { running: metrics.requestsRunning, waiting: metrics.requestsWaiting ?? 0 } : undefined;
          } catch {
            replica.load = undefined;
          }
        }),
    );
  }

  persisted(): PersistedReplica[] {
    return [...this.replicas.values()].map((replica) => ({
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
      ...(replica.metricsPath !== undefined ? { metrics_path: replica.metricsPath } : {}),
      ...(replica.weightsPath !== undefined ? { weights_path: replica.weightsPath } : {}),
      ...(replica.reason !== undefined ? { reason: replica.reason } : {}),
      ...(replica.reported ? { reported: true } : {}),
    }));
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

  private transition(replica: Replica, state: ReplicaState, reason?: string): void {
    replica.state = state;
    replica.since = now();
    replica.reason = reason;
    replica.reported = false;
    // The spec file serves only to adopt a running engine; an ended one must not be taken for the next.
    if (isTerminal(state) && replica.launchId !== undefined) void this.removeSpecFile(replica.spec.id, replica.launchId);
    this.options.logger.info({ replica: replica.spec.id, state, ...(reason ? { reason } : {}) }, `replica-${state}`);
    this.options.onChange("state");
  }

  private newReplica(spec: ReplicaSpec, state: ReplicaState): Replica {
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

  /**
   * Starts a replica in the background and answers at once with its status
   * (fetching). Idempotent for a repeated request with the same spec, so a
   * server that retries after a lost answer does not start a second engine.
   */
  start(spec: ReplicaSpec): ReplicaStatus {
    const existing = this.replicas.get(spec.id);
    if (existing?.stopping !== undefined && !isTerminal(existing.state)) {
      // Answering with its status would look accepted; the stop then ends it and nothing starts.
      throw new DomainError(
        "replica_conflict",
        `replica ${spec.id} on node ${this.options.nodeName} is stopping; start it again when it has stopped`,
        "Wait until `llmgw ctl replicas` shows it stopped or no longer lists it, then start it again.",
      );
    }
    if (existing && !isTerminal(existing.state)) {
      // Compared without the API key: an adopted replica's spec comes from the state file, which leaves it out.
      if (JSON.stringify(withoutApiKey(existing.spec)) === JSON.stringify(withoutApiKey(spec))) return this.status(existing);
      throw new DomainError(
        "replica_conflict",
        `replica ${spec.id} already runs on node ${this.options.nodeName} (${existing.spec.model}/${existing.spec.profile}, ${existing.state}) with a different specification`,
        "Stop it first, or start the new one under another id.",
      );
    }
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
    const replica = this.newReplica(spec, "fetching");
    this.replicas.set(spec.id, replica);
    this.options.logger.info({ replica: spec.id, model: spec.model, engine: spec.engine, cards: spec.cards }, "replica-fetching");
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
      const weightsPath = replica.spec.engine === "comfyui" ? await this.prepareComfyui(replica) : await this.fetch(replica);
      replica.weightsPath = weightsPath;
      const adapters: { name: string; path: string; scale?: number }[] = [];
      for (const adapter of replica.spec.adapters) {
        const adapterPath = await this.fetchSource(replica, adapter.source, false);
        adapters.push({ name: adapter.name, path: adapterPath, ...(adapter.scale !== undefined ? { scale: adapter.scale } : {}) });
      }
      if (this.interrupted(replica)) return;
      replica.progress = undefined;
      this.transition(replica, "starting");
      await this.launch(replica, weightsPath, adapters);
      if (this.interrupted(replica)) return;
      await this.waitHealthy(replica, replica.spec.startup_timeout_ms ?? this.options.startupTimeoutMs);
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
    const outcome = await this.stopProcesses(replica);
    this.transition(replica, "failed", `${reason}${this.survivorsNote(replica, outcome)}`);
  }

  private async fetch(replica: Replica): Promise<string> {
    return await this.fetchSource(replica, replica.spec.source, true);
  }

  private async prepareComfyui(replica: Replica): Promise<string> {
    const simulation = this.options.simulation;
    const folder = await prepareComfyui({
      setup: this.options.comfyui ?? { folder: this.options.enginePaths.comfyui ?? path.join(this.options.dataDirectory, "ComfyUI"), installCommand: undefined },
      comfy: replica.spec.comfy ?? { files: [], custom_nodes: [] },
      nodeName: this.options.nodeName,
      pretendFiles: simulation !== undefined && !simulation.fetch,
      pretendCustomNodes: simulation !== undefined,
      fetchFile: async (source) => await this.fetchSource(replica, source, true),
      log: (line) => this.options.logger.info({ replica: replica.spec.id }, line),
      signal: replica.abort.signal,
    });
    if (simulation && !simulation.fetch) {
      replica.progress = { fraction: 1, bytes_done: 0, bytes_total: 0 };
      this.options.onChange("progress");
    }
    this.options.onInventoryChanged?.();
    return folder;
  }

  private async fetchSource(replica: Replica, source: string, reportProgress: boolean): Promise<string> {
    const simulation = this.options.simulation;
    const parsed = parseWeightsSource(source);
    if (simulation && !simulation.fetch && parsed.kind !== "local") {
      // Pretend weights: the demo and CI have no network and no room for real models.
      const pretend = path.join(this.weightsDirectory, "simulated", cacheLocation(parsed));
      await mkdir(pretend, { recursive: true });
      if (reportProgress) {
        replica.progress = { fraction: 1, bytes_done: 0, bytes_total: 0 };
        this.options.onChange("progress");
      }
      return pretend;
    }
    return await fetchWeights({
      source,
      cacheDirectory: this.weightsDirectory,
      nodeName: this.options.nodeName,
      hubUrl: this.options.hubUrl,
      hubToken: this.options.hubToken,
      signal: replica.abort.signal,
      onProgress: reportProgress
        ? (progress) => {
            replica.progress = {
              fraction: progress.bytesTotal ? Math.min(1, progress.bytesDone / progress.bytesTotal) : 0,
              bytes_done: progress.bytesDone,
              ...(progress.bytesTotal !== undefined ? { bytes_total: progress.bytesTotal } : {}),
            };
            this.options.onChange("progress");
          }
        : undefined,
    });
  }

  /** The command that runs: the driver's own, or the simulated engine given the driver's arguments. */
  private async commandLine(spec: ReplicaSpec, driver: EngineDriver, launch: EngineLaunch): Promise<{ argv: string[]; env: Record<string, string> }> {
    const env: Record<string, string> = { ...launch.env };
    // Every engine sees only its own cards; a driver that forgot would let it grab every card on the node.
    env.CUDA_VISIBLE_DEVICES ??= spec.cards.join(",");
    const simulation = this.options.simulation;
    if (simulation) {
      const firstCard = spec.cards[0];
      const cardClass = firstCard !== undefined ? simulation.cardClass(firstCard) : undefined;
      const hints: Record<string, string> = {
        LLMGW_SIM_NODE: this.options.nodeName,
        ...(cardClass !== undefined ? { LLMGW_SIM_GPU_CLASS: cardClass } : {}),
        ...(spec.simulation?.weights_bytes_per_card !== undefined ? { LLMGW_SIM_WEIGHTS_BYTES_PER_CARD: String(spec.simulation.weights_bytes_per_card) } : {}),
        ...(spec.simulation?.load_ms !== undefined ? { LLMGW_SIM_LOAD_MS: String(spec.simulation.load_ms) } : {}),
      };
      return {
        argv: [...simulation.llmgwCommand, "sim-engine", "--engine", spec.engine, "--", ...launch.argv.slice(1)],
        env: { ...env, ...hints },
      };
    }
    const [program, ...args] = launch.argv;
    // A configured path replaces the driver's program (a vllm outside PATH, the python of an SGLang venv);
    // ComfyUI's is its checkout folder, which its driver already put in the command line.
    const configured = spec.engine === "comfyui" ? undefined : this.options.enginePaths[spec.engine];
    const wanted = configured !== undefined && program === driver.program ? configured : program;
    const found = wanted === undefined ? undefined : await findProgram(wanted, env.PATH ?? process.env.PATH);
    if (found === undefined) {
      throw new DomainError(
        "engine_missing",
        `engine ${spec.engine} is not installed on node ${this.options.nodeName}: program "${wanted ?? ""}" was not found${wanted?.includes("/") ? "" : " on PATH"}`,
        `Install ${spec.engine} on ${this.options.nodeName} (or start the agent with --engine-path ${spec.engine}=PATH), or place the replica on a node whose inventory lists ${spec.engine}.`,
      );
    }
    return { argv: [found, ...args], env };
  }

  private async launch(replica: Replica, weightsPath: string, adapters: { name: string; path: string; scale?: number }[]): Promise<void> {
    const { spec } = replica;
    const driver = this.options.driverFor(spec.engine);
    const port = spec.port ?? (await findFreePort());
    if (!(await isPortFree(port))) throw this.portTaken(spec, port);
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
    });
    const { argv, env } = await this.commandLine(spec, driver, launch);
    await mkdir(this.logsDirectory, { recursive: true, mode: 0o700 });
    const logPath = this.logPath(spec.id);
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
      health_path: launch.healthPath,
      metrics_path: launch.metricsPath,
      weights_path: weightsPath,
    };
    await writePrivateFile(this.specPath(spec.id), `${JSON.stringify(specRecord, null, 2)}\n`);
    // Only argv goes in the log, and masked: the environment may carry tokens, and a profile's args
    // may carry an --api-key or a mirror URL with a password, while a read-only token can read this log
    // (S9: no secret in a log). The engine gets the real argv.
    await appendFile(logPath, `--- ${now()} llmgw agent on ${this.options.nodeName} starts ${spec.engine} for ${spec.model}: ${redactArgs(argv).join(" ")}\n`, { mode: 0o600 });
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
    replica.metricsPath = launch.metricsPath;
    replica.startTicks = await processStartTicks(spawned.pid);
    this.options.logger.info({ replica: spec.id, pid: spawned.pid, port }, "replica-spawned");
    this.options.onChange("state");
    void spawned.exited.then((exit) => this.exited(replica, exit));
  }

  private portTaken(spec: ReplicaSpec, port: number): DomainError {
    return new DomainError(
      "port_taken",
      `port ${port} on node ${this.options.nodeName} is already taken by another process, so ${spec.engine} cannot serve ${spec.model} on it`,
      spec.port !== undefined ? "Leave the replica's port out (the agent picks a free one), or free that port." : "Start the replica again; the agent picks another free port.",
    );
  }

  private async logTail(id: string): Promise<string> {
    const lines = await readLogTail(this.logPath(id), logTailLines);
    return lines.length > 0 ? `; last lines of ${this.logPath(id)}:\n${lines.join("\n")}` : `; its log ${this.logPath(id)} is empty`;
  }

  private describeExit(exit: { code: number | null; signal: NodeJS.Signals | null }): string {
    return exit.signal ? `was killed by ${exit.signal}` : exit.code === null ? "exited" : `exited with code ${exit.code}`;
  }

  private async exited(replica: Replica, exit: { code: number | null; signal: NodeJS.Signals | null }): Promise<void> {
    replica.exit = exit;
    if (this.closing || replica.stopping !== undefined || isTerminal(replica.state)) return;
    if (replica.state === "starting") return; // waitHealthy reports it, with the load failure's reason
    const { spec } = replica;
    const wasState = replica.state;
    // The leader is gone, but its workers may still hold the cards: they go before the cards are called free.
    const outcome = await this.stopProcesses(replica);
    if (this.closing || replica.stopping !== undefined || isTerminal(replica.state)) return;
    this.transition(
      replica,
      "failed",
      `engine ${spec.engine} for ${spec.model} on node ${this.options.nodeName} (pid ${replica.pid ?? "?"}) ${this.describeExit(exit)} while ${wasState}${this.survivorsNote(replica, outcome)}${await this.logTail(spec.id)}`,
    );
  }

  /** Stops every process of the replica's engine (its group, and whatever carries its marker); answers once they are gone. */
  private async stopProcesses(replica: Replica): Promise<StopOutcome> {
    // An unmarked engine's group only while its leader runs: after that, the group id may be a stranger's.
    const groupIsKnown = replica.launchId !== undefined || (replica.pid !== undefined && (await isProcessAlive(replica.pid, replica.startTicks)));
    return await stopEngine(
      { processGroup: groupIsKnown ? replica.processGroup : undefined, launchId: replica.launchId, agentDirectory: this.options.dataDirectory },
      replica.spec.stop_grace_ms ?? this.options.stopGraceMs,
    );
  }

  private survivorsNote(replica: Replica, outcome: StopOutcome): string {
    if (outcome.survivors.length === 0) return "";
    const cards = replica.spec.cards.length > 0 ? `cards ${replica.spec.cards.join(",")}` : "its memory";
    return `; processes ${outcome.survivors.join(", ")} of its engine are still alive after SIGKILL and may hold ${cards}: stop them by hand (kill -9) before that is used again`;
  }

  private async removeSpecFile(id: string, launchId: string): Promise<void> {
    // Only this launch's: a later start of the same id may have written its own meanwhile.
    const text = await readFile(this.specPath(id), "utf8").catch(() => undefined);
    if (text === undefined) return;
    try {
      if ((JSON.parse(text) as { launch_id?: unknown }).launch_id !== launchId) return;
    } catch {
      // a damaged file is of no use to anyone
    }
    await rm(this.specPath(id), { force: true }).catch(() => undefined);
  }

  private async waitHealthy(replica: Replica, timeoutMs: number): Promise<void> {
    const { spec } = replica;
    const url = `http://${this.probeHost}:${replica.port ?? 0}${replica.healthPath ?? "/health"}`;
    const deadline = Date.now() + timeoutMs;
    while (!this.interrupted(replica)) {
      if (replica.exit) {
        const port = replica.port;
        if (port !== undefined && !(await isPortFree(port))) throw this.portTaken(spec, port);
        throw new DomainError(
          "engine_failed",
          `engine ${spec.engine} ${this.describeExit(replica.exit)} while loading ${spec.model} on node ${this.options.nodeName}${await this.logTail(spec.id)}`,
          "Read the log tail above; `llmgw ctl logs " + spec.id + "` shows all of it.",
        );
      }
      if (await probeHealth(url, Math.min(3000, Math.max(500, this.options.healthPollMs * 4)))) return;
      if (Date.now() >= deadline) {
        throw new DomainError(
          "engine_failed",
          `engine ${spec.engine} for ${spec.model} on node ${this.options.nodeName} did not answer GET ${url} within ${Math.round(timeoutMs / 1000)} s${await this.logTail(spec.id)}`,
          "Give the profile a longer startup timeout if the model is large, or read the log for a load that hangs.",
        );
      }
      try {
        await sleep(this.options.healthPollMs, undefined, { signal: replica.abort.signal });
      } catch {
        return;
      }
    }
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
      const wasReady = replica.state === "ready";
      this.transition(replica, "draining");
      replica.stopping = this.stopNow(replica, drain && wasReady);
    }
    return this.status(replica);
  }

  private async stopNow(replica: Replica, drain: boolean): Promise<void> {
    try {
      if (drain) await this.waitDrained(replica);
      replica.abort.abort();
      await replica.running?.catch(() => undefined);
      // Whether or not the spawned process has exited: its workers may live on, holding the cards.
      const outcome = await this.stopProcesses(replica);
      if (outcome.killed) this.options.logger.warn({ replica: replica.spec.id }, "engine ignored SIGTERM for its grace period; killed");
      if (this.closing) return;
      if (outcome.survivors.length > 0) {
        // "stopped" would free the cards for the next placement while these still hold them.
        this.transition(replica, "failed", `stopping replica ${replica.spec.id} on node ${this.options.nodeName} did not end every process of its engine${this.survivorsNote(replica, outcome)}`);
        return;
      }
      this.transition(replica, "stopped");
    } catch (error) {
      if (!this.closing) this.transition(replica, "failed", `stopping on node ${this.options.nodeName} failed: ${(error as Error).message}`);
    }
  }

  /** Waits until the engine reports nothing running or waiting, for at most the drain timeout. */
  private async waitDrained(replica: Replica): Promise<void> {
    const driver = this.options.driverFor(replica.spec.engine);
    const deadline = Date.now() + this.options.drainTimeoutMs;
    while (Date.now() < deadline && !this.closing && replica.exit === undefined) {
      try {
        const response = await request(`http://${this.probeHost}:${replica.port ?? 0}${replica.metricsPath ?? "/metrics"}`, { signal: AbortSignal.timeout(2000) });
        const text = await response.body.text();
        if (response.statusCode === 200) {
          const metrics = driver.parseMetrics(text);
          if ((metrics.requestsRunning ?? 0) + (metrics.requestsWaiting ?? 0) === 0 && metrics.requestsRunning !== undefined) return;
        }
      } catch {
        // unreadable metrics: keep waiting until the deadline rather than cut requests short
      }
      await sleep(Math.max(100, this.options.healthPollMs));
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
   * Takes over what a previous agent process left: a live engine
   * whose health answers is reported as it was, and nothing is restarted. A
   * fetch that was cut resumes; an engine that died meanwhile is failed with
   * its log tail; a stop that was in progress is finished.
   */
  async adopt(previous: readonly PersistedReplica[], found: readonly MarkedProcess[] = []): Promise<void> {
    const live = previous.filter((record) => !isTerminal(record.state) && record.pid !== undefined);
    const orphans = orphanEngines(found, {
      launchIds: new Set(live.flatMap((record) => (record.launch_id !== undefined ? [record.launch_id] : []))),
      processGroups: new Set(live.flatMap((record) => (record.process_group !== undefined ? [record.process_group] : []))),
    });
    // A record cut between the engine's start and the state file's next write names no pid, but its engine
    // runs: it is adopted from what it carries rather than started a second time beside itself.
    const running = new Set(orphans.flatMap((engine) => (engine.marker ? [engine.marker.replicaId] : [])));
    const records = previous.filter((record) => !(record.pid === undefined && !isTerminal(record.state) && running.has(record.spec.id)));
    await Promise.all(records.map((record) => this.adoptOne(record)));
    await Promise.all(orphans.map((engine) => this.adoptOrphan(engine)));
  }

  /** Stops that no replica reports (an engine with a damaged marker, a second engine for one id); settled() waits for them. */
  private readonly unlistedStops: Promise<void>[] = [];

  /**
   * An engine found by its marker that no record names. Adopted when its spec
   * file (beside its log) belongs to it and its process runs; otherwise
   * stopped, and listed as draining until it is gone, so the server sees
   * what holds those cards and places nothing there meanwhile.
   */
  private async adoptOrphan(engine: FoundEngine): Promise<void> {
    const { marker, leader } = engine;
    const pids = engine.processes.map((process) => process.pid).join(", ");
    const existing = marker ? this.replicas.get(marker.replicaId) : undefined;
    if (!marker || (existing && !isTerminal(existing.state))) {
      this.options.logger.warn({ pids, replica: marker?.replicaId }, marker ? "a second engine for a running replica found; stopping it" : "engine processes with a damaged marker found; stopping them");
      const target = { processGroup: leader?.processGroup, launchId: marker?.launchId, agentDirectory: this.options.dataDirectory };
      this.unlistedStops.push(
        stopEngine(target, this.options.stopGraceMs).then(
          (outcome) => {
            if (outcome.survivors.length > 0) this.options.logger.error({ survivors: outcome.survivors }, "orphan engine processes survived SIGKILL");
          },
          () => undefined,
        ),
      );
      return;
    }
    const record = leader ? await this.readSpecFile(marker) : undefined;
    if (record && leader) {
      this.options.logger.info({ replica: marker.replicaId, pid: leader.pid }, "engine found without its state record; adopting it from its spec file");
      await this.adoptOne({ ...record, state: "starting", since: now(), pid: leader.pid, process_group: leader.processGroup, start_ticks: leader.startTicks, launch_id: marker.launchId });
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
    const replica = this.newReplica(spec, "draining");
    Object.assign(replica, {
      pid: leader?.pid,
      processGroup: leader?.processGroup ?? engine.processes[0]?.processGroup,
      startTicks: leader?.startTicks,
      launchId: marker.launchId,
    });
    this.replicas.set(spec.id, replica);
    const missing = leader ? `its spec file ${this.specPath(spec.id)} is missing or not its own` : "the process the agent started is gone and only its workers remain";
    this.transition(
      replica,
      "draining",
      `engine ${spec.engine} for ${spec.model} on cards ${spec.cards.join(",") || "none"} of node ${this.options.nodeName} (processes ${pids}) was running without a record the agent could adopt (${missing}); stopping it so its cards are free`,
    );
    replica.stopping = this.stopNow(replica, false);
  }

  private async readSpecFile(marker: EngineMarker): Promise<PersistedReplica | undefined> {
    let json: unknown;
    try {
      json = JSON.parse(await readFile(this.specPath(marker.replicaId), "utf8"));
    } catch {
      return undefined;
    }
    const parsed = persistedReplicaSchema.safeParse(json);
    if (!parsed.success || parsed.data.launch_id !== marker.launchId || parsed.data.spec.id !== marker.replicaId) return undefined;
    return parsed.data;
  }

  private async adoptOne(record: PersistedReplica): Promise<void> {
    const replica = this.newReplica(record.spec, record.state);
    Object.assign(replica, {
      since: record.since,
      port: record.port,
      pid: record.pid,
      processGroup: record.process_group,
      startTicks: record.start_ticks,
      launchId: record.launch_id,
      healthPath: record.health_path,
      metricsPath: record.metrics_path,
      weightsPath: record.weights_path,
      reason: record.reason,
      reported: record.reported ?? false,
      progress: record.progress,
    });
    this.replicas.set(record.spec.id, replica);
    if (isTerminal(record.state)) return;
    if (record.pid === undefined) {
      // Cut before an engine existed: fetch again (resuming partial files) and start it.
      replica.state = "fetching";
      replica.running = this.run(replica);
      return;
    }
    const { spec } = replica;
    if (!(await isProcessAlive(record.pid, record.start_ticks))) {
      // Not adopted: there is nothing to adopt. Workers it left behind still hold its cards, so they go first.
      replica.exit = { code: null, signal: null };
      const outcome = await this.stopProcesses(replica);
      this.transition(
        replica,
        "failed",
        `engine ${spec.engine} for ${spec.model} on node ${this.options.nodeName} (pid ${record.pid}) was no longer running when the agent restarted${this.survivorsNote(replica, outcome)}${await this.logTail(spec.id)}`,
      );
      return;
    }
    replica.adopted = true;
    if (record.state === "draining") {
      replica.stopping = this.stopNow(replica, false);
      return;
    }
    const healthy = await probeHealth(`http://${this.probeHost}:${record.port ?? 0}${record.health_path ?? "/health"}`);
    this.options.logger.info({ replica: spec.id, pid: record.pid, healthy }, "replica-adopted");
    if (healthy) {
      if (record.state !== "ready") this.transition(replica, "ready");
      return;
    }
    // Alive but not answering (still loading, or busy): wait for it as for a start, and fail it only past the deadline.
    replica.running = (async () => {
      try {
        await this.waitHealthy(replica, spec.startup_timeout_ms ?? this.options.startupTimeoutMs);
        if (!this.interrupted(replica) && replica.state !== "ready") this.transition(replica, "ready");
      } catch (error) {
        if (!this.interrupted(replica)) await this.fail(replica, error);
      }
    })();
  }
}
