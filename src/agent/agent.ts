import { realpath } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pino, { type Logger } from "pino";
import { DomainError } from "../errors/domain-error.js";
import { describeIssues } from "../catalog/schema-errors.js";
import { listenFailure } from "../errors/listen-failure.js";
import { parseListen } from "../catalog/server-config.js";
import { oneNodeSpec, parseHardwareSpec, type HardwareSpec } from "../fleet/gpu-spec.js";
import { llmgwCommand } from "../package-root.js";
import { builtinLlamaInstall } from "../engines/llama/llama-runtime.js";
import { ensurePrivateDirectory, privateFileWarning } from "../files/private-files.js";
import { hashToken } from "../auth/tokens.js";
import { AgentStateWriter, readAgentState, type AgentState } from "./agent-state.js";
import { findMarkedProcesses } from "./find-marked-processes.js";
import { buildControlApi } from "./control-api.js";
import { WeightsPuller } from "./weights-puller.js";
import { loadEngineDrivers, type DriverLookup } from "./engine-drivers.js";
import { collectInventory, type EnginePaths } from "./inventory.js";
import { withSimulatedUse } from "./simulated-card-use.js";
import type { ComfyuiSetup } from "./prepare-comfyui.js";
import { nodeNameSchema, protocolVersion, type Inventory, type ReplicaStatus } from "../protocol/agent-protocol.js";
import { defaultLogRotation, type LogRotation } from "./replica-log.js";
import { ReplicaSupervisor } from "./replica-supervisor.js";
import { postHeartbeat, postJoin, type ServerCallFailure } from "./server-client.js";
import { verifyingDispatcher, type TlsFiles } from "../net/tls-files.js";

export interface AgentOptions {
  /** The server's base URL, e.g. http://control:8080 */
  readonly server: string;
  /** Needed for the first join only: the credential it earns is kept in the data directory. */
  readonly joinToken?: string | undefined;
  /** Default: the host name. */
  readonly name?: string | undefined;
  /** Default: one fabric per node, named after it. */
  readonly fabric?: string | undefined;
  readonly labels?: Readonly<Record<string, string>> | undefined;
  /** Default: ./llmgw-agent-data */
  readonly dataDirectory?: string | undefined;
  /** HOST:PORT for the control API. Default 127.0.0.1:0 (any free port, loopback only). */
  readonly listen?: string | undefined;
  /** Serve the control API over HTTPS with this certificate (--tls-cert/--tls-key). */
  readonly tls?: TlsFiles | undefined;
  /** A private CA the server's certificate is verified against, besides the system's (--ca, LLMGW_CA). */
  readonly ca?: Buffer | undefined;
  /** The control URL the server should call, when it differs from the listen address (NAT, 0.0.0.0). */
  readonly advertise?: string | undefined;
  /** Where engines listen: 127.0.0.1 (default) or an address gateways on other machines reach, such as 0.0.0.0. */
  readonly engineHost?: string | undefined;
  /** Pretend hardware, as "4xH100-80GB@nvl0,cpu:32c/256g"; every engine becomes the simulated one. */
  readonly simulate?: string | undefined;
  /** With --simulate, fetch remote sources for real instead of pretending. */
  readonly simulateFetch?: boolean | undefined;
  readonly enginePaths?: EnginePaths | undefined;
  /** A shell command that installs ComfyUI into $COMFYUI_DIR, run when a ComfyUI model is first placed on a node without it. */
  readonly comfyuiInstall?: string | undefined;
  readonly hubUrl?: string | undefined;
  readonly hubToken?: string | undefined;
  /** Until the server's join answer says otherwise. Default 2000. */
  readonly heartbeatIntervalMs?: number | undefined;
  readonly startupTimeoutMs?: number | undefined;
  readonly stopGraceMs?: number | undefined;
  readonly drainTimeoutMs?: number | undefined;
  readonly healthPollMs?: number | undefined;
  readonly logRotation?: LogRotation | undefined;
  /** How long stopped and failed replicas stay listed after being reported. Default 60000. */
  readonly terminalRetentionMs?: number | undefined;
  /** Default: src/engines/drivers. Tests give a stand-in. */
  readonly driverFor?: DriverLookup | undefined;
  /** How to run `llmgw` for the simulated engine. Default: this node binary and the package's bin/llmgw.js. */
  readonly llmgwCommand?: readonly string[] | undefined;
  readonly logger?: Logger | undefined;
}

export interface RunningAgent {
  /** The control API's URL as advertised to the server. */
  readonly url: string;
  readonly name: string;
  readonly dataDirectory: string;
  /** What the operator should fix, said at start: a data directory or secret file open to other users. */
  readonly warnings: readonly string[];
  readonly supervisor: ReplicaSupervisor;
  /**
   * Settles when the agent stops: resolves after close(), rejects when the
   * server refuses it for good (another protocol version, a refused join
   * token). The CLI prints the rejection and exits non-zero.
   */
  readonly done: Promise<void>;
  /** Resolves at the first accepted join or heartbeat. */
  readonly connected: Promise<void>;
  /** Sends a heartbeat now (tests; also after a state change). */
  heartbeatNow(): Promise<void>;
  /** Stops the control API and heartbeats. Engines keep running: the next agent adopts them. */
  close(): Promise<void>;
}

/**
 * The longest wait between heartbeats while the server is away. A restarted
 * server calls a node lost when it has not heard from it within its settling
 * window (20 s by default) and heartbeat deadline (15 s); an agent backing off
 * to 30 s was marked lost, with every replica on it, though nothing had
 * failed. 5 s (6 s with jitter) keeps well inside both.
 */
const maxBackoffMs = 5_000;
const inventoryRefreshMs = 30_000;

function defaultNodeName(): string {
  const cleaned = os.hostname().split(".")[0]?.replace(/[^A-Za-z0-9._-]/g, "-").replace(/^[^A-Za-z0-9]+/, "") ?? "";
  return (cleaned || "node").slice(0, 63);
}

/**
 * The wait before the next heartbeat: the interval, doubled per failure up to
 * maxBackoffMs, and jittered (±20 %) so agents that lost the server together
 * do not return in one wave.
 */
export function heartbeatDelayMs(failures: number, intervalMs: number, random: () => number = Math.random): number {
  const delay = failures === 0 ? intervalMs : Math.min(maxBackoffMs, intervalMs * 2 ** Math.min(failures, 8));
  return Math.round(delay * (0.8 + random() * 0.4));
}

export async function startAgent(options: AgentOptions): Promise<RunningAgent> {
  const logger = options.logger ?? pino({ name: "llmgw-agent" });
  const nameResult = nodeNameSchema.safeParse(options.name ?? defaultNodeName());
  if (!nameResult.success) {
    throw new DomainError("config_invalid", `--name "${options.name ?? ""}": ${describeIssues(nameResult.error.issues, "name", 1)}`, "Give a name such as gpu-node-1.");
  }
  const name = nameResult.data;
  let serverUrl: string;
  try {
    serverUrl = new URL(options.server).toString();
  } catch {
    throw new DomainError("config_invalid", `--server "${options.server}" is not a URL`, "Give the server's address, such as http://control-plane:8080.");
  }
  const fabric = options.fabric ?? name;
  const dataDirectory = path.resolve(options.dataDirectory ?? "llmgw-agent-data");
  const simulate: HardwareSpec | undefined = options.simulate !== undefined ? oneNodeSpec(parseHardwareSpec(options.simulate), options.simulate) : undefined;
  const listen = parseListen(options.listen ?? "127.0.0.1:0", "--listen");
  const stateFile = path.join(dataDirectory, "agent-state.json");
  const warnings = [ensurePrivateDirectory(dataDirectory), privateFileWarning(stateFile)].filter((warning) => warning !== undefined);
  for (const warning of warnings) logger.warn(warning);
  // The identity engines carry (LLMGW_AGENT_DIR): the same folder reached through a symbolic link is the same agent.
  const agentDirectory = await realpath(dataDirectory);

  const previous = await readAgentState(stateFile);
  // A credential is the server's answer to one join; another server would refuse it.
  const sameServer = previous !== undefined && previous.server_url === serverUrl;
  let credential = sameServer ? previous.credential : undefined;
  // Only the hash of the server's control secret is kept: this file alone must not let anyone command the agent.
  let controlSecretHash = sameServer ? previous.control_secret_hash : undefined;
  if (credential === undefined && !options.joinToken) {
    throw new DomainError(
      "join_refused",
      `agent ${name} has no join token and no saved credential for ${serverUrl} in ${stateFile}`,
      "Get a join token with `llmgw ctl node token` and pass it with --token (or LLMGW_JOIN_TOKEN).",
    );
  }
  const driverFor = options.driverFor ?? (await loadEngineDrivers());
  const enginePaths = options.enginePaths ?? {};
  const comfyui: ComfyuiSetup = { folder: enginePaths.comfyui ?? path.join(agentDirectory, "ComfyUI"), installCommand: options.comfyuiInstall };
  const gatherInventory = async (lastKnownGpus?: Inventory["gpus"]): Promise<Inventory> =>
    await collectInventory({
      hostname: os.hostname(),
      fabric,
      simulate,
      weightsDirectory: path.join(dataDirectory, "weights"),
      enginePaths,
      comfyui,
      builtinLlama: builtinLlamaInstall(),
      onWarning: (message) => logger.warn(message),
      lastKnownGpus,
    });
  let inventory = await gatherInventory();

  const stateWriter = new AgentStateWriter(stateFile);
  let closed = false;
  let connectedOnce = false;
  let beat: () => Promise<void> = async () => undefined;
  let heartbeatSoon: NodeJS.Timeout | undefined;
  const stateNow = (): AgentState => ({
    version: 1,
    server_url: serverUrl,
    node_name: name,
    ...(credential !== undefined ? { credential } : {}),
    ...(controlSecretHash !== undefined ? { control_secret_hash: controlSecretHash } : {}),
    replicas: supervisor.persisted(),
  });
  const persist = async (): Promise<void> => {
    await stateWriter.write(stateNow()).catch((error: unknown) => logger.error({ error: (error as Error).message, stateFile }, "could not write agent state"));
  };
  const supervisor: ReplicaSupervisor = new ReplicaSupervisor({
    nodeName: name,
    dataDirectory: agentDirectory,
    driverFor,
    simulation: simulate
      ? {
          llmgwCommand: options.llmgwCommand ?? llmgwCommand(),
          fetch: options.simulateFetch ?? false,
          cardClass: (index) => inventory.gpus.find((gpu) => gpu.index === index)?.class,
        }
      : undefined,
    enginePaths,
    builtinLlamaCommand: builtinLlamaInstall() !== undefined ? (options.llmgwCommand ?? llmgwCommand()) : undefined,
    comfyui,
    // ComfyUI was just installed: the next heartbeat reads the inventory again instead of in 30 s.
    onInventoryChanged: () => {
      lastInventoryRefresh = 0;
    },
    engineHost: options.engineHost,
    hubUrl: options.hubUrl ?? process.env.HF_ENDPOINT ?? "https://huggingface.co",
    hubToken: options.hubToken ?? process.env.HF_TOKEN,
    startupTimeoutMs: options.startupTimeoutMs ?? 30 * 60_000,
    stopGraceMs: options.stopGraceMs ?? 30_000,
    drainTimeoutMs: options.drainTimeoutMs ?? 60_000,
    healthPollMs: options.healthPollMs ?? 500,
    logRotation: options.logRotation ?? defaultLogRotation,
    terminalRetentionMs: options.terminalRetentionMs ?? 60_000,
    logger,
    onChange: (kind) => {
      if (closed) return;
      if (kind === "state") void persist();
      // A state change reaches the server within a fraction of a second, not at the next beat.
      if (kind === "state" && connectedOnce && !heartbeatSoon) {
        heartbeatSoon = setTimeout(() => {
          heartbeatSoon = undefined;
          void beat();
        }, 100);
      }
    },
  });
  // Adopt before anything else: the first report to the server must already include the running engines,
  // those the state file names and those found by their marker (the state file may be lost or old).
  const found = await findMarkedProcesses(agentDirectory);
  if (found === undefined) logger.warn("this system has no /proc: engines whose record in the state file is lost cannot be found");
  await supervisor.adopt(previous?.replicas ?? [], found ?? []);
  await persist();
  supervisor.startBackgroundTasks();

  const puller = new WeightsPuller({
    nodeName: name,
    cacheDirectory: path.join(agentDirectory, "weights"),
    hubUrl: options.hubUrl ?? process.env.HF_ENDPOINT ?? "https://huggingface.co",
    hubToken: options.hubToken ?? process.env.HF_TOKEN,
    pretend: simulate !== undefined && !(options.simulateFetch ?? false),
    logger,
  });
  const app = buildControlApi({
    supervisor,
    puller,
    nodeName: name,
    credential: () => credential,
    controlSecretHash: () => controlSecretHash,
    onChange: () => undefined,
    tls: options.tls,
    certificateLog: {
      renewed: (file) => logger.info({ file }, "tls-certificate-renewed: new connections get the new certificate"),
      failed: (message) => logger.warn(`tls-certificate-not-renewed: ${message}`),
    },
  });
  const serverDispatcher = verifyingDispatcher(options.ca);
  try {
    await app.listen({ host: listen.host, port: listen.port });
  } catch (error) {
    // Stop what already runs (log rotation, the adopted-engine watch, resumed fetches): a caller that
    // catches this, or a test, would otherwise keep an agent half-started. Engines keep running, as at close.
    closed = true;
    await app.close().catch(() => undefined);
    puller.close();
    await supervisor.close();
    await persist();
    await stateWriter.flushed();
    throw listenFailure(`${listen.host}:${listen.port}`, "--listen", error);
  }
  const boundPort = (app.server.address() as { port: number }).port;
  const advertisedHost = listen.host === "0.0.0.0" || listen.host === "::" ? os.hostname() : listen.host.includes(":") ? `[${listen.host}]` : listen.host;
  const url = options.advertise ?? `${options.tls ? "https" : "http"}://${advertisedHost}:${boundPort}`;

  let heartbeatIntervalMs = options.heartbeatIntervalMs ?? 2000;
  let sendInventory = true;
  let lastInventoryText = "";
  let lastInventoryRefresh = Date.now();
  let failures = 0;
  let timer: NodeJS.Timeout | undefined;
  let beating: Promise<void> | undefined;

  let resolveDone!: () => void;
  let rejectDone!: (error: unknown) => void;
  const done = new Promise<void>((resolve, reject) => {
    resolveDone = resolve;
    rejectDone = reject;
  });
  // Handled here so a refusal nobody awaits is not an unhandled rejection; awaiting `done` still sees it.
  done.catch(() => undefined);
  let resolveConnected!: () => void;
  const connected = new Promise<void>((resolve) => {
    resolveConnected = resolve;
  });

  const stopForGood = async (error: DomainError): Promise<void> => {
    logger.error({ code: error.code, hint: error.hint }, error.message);
    await close(error);
  };

  // Engines of this node found running (by the state file or by their marker) show that this agent is the
  // node's own, started again without its credential (a lost state file): the live agent the server still
  // hears is its dead predecessor, so it waits for the server's deadline instead of giving up.
  const runsEnginesOfThisNode = (): boolean => supervisor.list().some((replica) => !["stopped", "failed"].includes(replica.state));

  const join = async (): Promise<"joined" | ServerCallFailure> => {
    if (!options.joinToken) {
      return { kind: "refused", status: 401, message: `the server refused agent ${name}'s saved credential and no join token was given` };
    }
    const result = await postJoin({ url: serverUrl, dispatcher: serverDispatcher }, {
      protocol: protocolVersion,
      join_token: options.joinToken,
      name,
      address: url,
      fabric,
      labels: { ...(options.labels ?? {}) },
      inventory,
    });
    if (!result.ok) return result.failure;
    credential = result.value.credential;
    // A server without control secrets (an older release) presents the credential; the control API accepts it then.
    controlSecretHash = result.value.control_secret !== undefined ? hashToken(result.value.control_secret) : undefined;
    heartbeatIntervalMs = result.value.heartbeat_interval_ms;
    sendInventory = false;
    lastInventoryText = JSON.stringify(inventory);
    await persist();
    logger.info({ server: serverUrl, node: name, address: url }, "agent-joined");
    return "joined";
  };

  const handleFailure = async (failure: ServerCallFailure, during: string): Promise<void> => {
    switch (failure.kind) {
      case "version":
        await stopForGood(failure.error);
        return;
      case "refused":
        if (during === "join") {
          await stopForGood(
            new DomainError(
              "join_refused",
              `the server at ${serverUrl} refused agent ${name}'s join: ${failure.message}`,
              "Get a fresh join token with `llmgw ctl node token` and start the agent with --token.",
            ),
          );
          return;
        }
        // The server forgot this node or its credential (its state was reset): join again.
        logger.warn({ message: failure.message, ...(failure.hint ? { hint: failure.hint } : {}) }, "credential refused; joining again");
        credential = undefined;
        {
          const rejoined = await join();
          if (rejoined !== "joined") await handleFailure(rejoined, "join");
          else {
            connectedOnce = true;
            resolveConnected();
          }
        }
        return;
      case "unreachable":
      case "rejected":
        if (failure.kind === "rejected" && failure.code === "name_taken" && during === "join" && !connectedOnce && !runsEnginesOfThisNode()) {
          // Another live agent has this name: retrying cannot help while it runs, and a retrying agent
          // would say nothing on the console. A later rejoin (the server forgot this node) keeps retrying:
          // its engines are running, and the other agent may be the one that should go.
          await stopForGood(
            new DomainError("name_taken", `the server at ${serverUrl} refused agent ${name}'s join: ${failure.message}`, failure.hint ?? "Give this agent its own --name."),
          );
          return;
        }
        failures += 1;
        // Engines keep running whatever happens here: an outage of the control plane must never take the models down.
        logger.warn({ failures, message: failure.message, ...(failure.hint ? { hint: failure.hint } : {}) }, `${during} failed; replicas keep running, retrying`);
        return;
    }
  };

  beat = async (): Promise<void> => {
    if (closed) return;
    if (beating) return await beating;
    beating = (async () => {
      try {
        if (credential === undefined) {
          const joined = await join();
          if (joined !== "joined") {
            await handleFailure(joined, "join");
            return;
          }
        }
        if (Date.now() - lastInventoryRefresh > inventoryRefreshMs) {
          lastInventoryRefresh = Date.now();
          // A refresh whose nvidia-smi fails keeps the cards: replicas still run on them.
          inventory = await gatherInventory(inventory.gpus).catch(() => inventory);
        }
        // Pretend cards say what they hold from the replicas running now, as nvidia-smi would within a beat.
        if (simulate) {
          const running = supervisor.persisted().map((replica) => ({ cards: replica.spec.cards, state: replica.state, gpuMemoryUtilization: replica.spec.gpu_memory_utilization }));
          inventory = { ...inventory, gpus: withSimulatedUse(inventory.gpus, running) };
        }
        const inventoryText = JSON.stringify(inventory);
        const withInventory = sendInventory || inventoryText !== lastInventoryText;
        await supervisor.scrapeLoad();
        const replicas: ReplicaStatus[] = supervisor.list();
        const result = await postHeartbeat({ url: serverUrl, dispatcher: serverDispatcher }, credential as string, {
          protocol: protocolVersion,
          name,
          address: url,
          ...(withInventory ? { inventory } : {}),
          replicas,
          ...(controlSecretHash !== undefined ? { control_secret_hash: controlSecretHash } : {}),
        });
        if (!result.ok) {
          await handleFailure(result.failure, "heartbeat");
          return;
        }
        failures = 0;
        const offered = result.value.control_secret;
        if (offered !== undefined && hashToken(offered) !== controlSecretHash) {
          controlSecretHash = hashToken(offered);
          await persist();
          logger.info({ node: name }, "control secret updated by the server");
        }
        if (withInventory) {
          sendInventory = false;
          lastInventoryText = inventoryText;
        }
        supervisor.acknowledge(replicas);
        connectedOnce = true;
        resolveConnected();
      } catch (error) {
        failures += 1;
        logger.error({ error: (error as Error).message }, "heartbeat failed");
      } finally {
        beating = undefined;
      }
    })();
    return await beating;
  };

  const schedule = (): void => {
    if (closed) return;
    timer = setTimeout(() => {
      void beat().finally(schedule);
    }, heartbeatDelayMs(failures, heartbeatIntervalMs));
  };

  const close = async (error?: DomainError): Promise<void> => {
    if (closed) return;
    closed = true;
    if (timer) clearTimeout(timer);
    if (heartbeatSoon) clearTimeout(heartbeatSoon);
    await app.close();
    puller.close();
    await supervisor.close();
    // The last word on disk: what the next agent adopts.
    await stateWriter.write(stateNow()).catch(() => undefined);
    await stateWriter.flushed();
    if (error) rejectDone(error);
    else resolveDone();
  };

  // The first contact runs before startAgent returns, so a refused token or a
  // server of another version fails the start itself, with its message.
  await beat();
  if (closed) {
    await done;
  }
  schedule();

  return {
    url,
    name,
    dataDirectory,
    warnings,
    supervisor,
    done,
    connected,
    heartbeatNow: () => beat(),
    close: () => close(),
  };
}
