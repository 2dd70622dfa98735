import { realpath } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pino from "pino";
import { listenFailure, type DomainError } from "../errors/for-agent.js";
import { llmgwCommand } from "../package-root.js";
import { builtinLlamaInstall } from "../engines/index.js";
import { ensurePrivateDirectory, privateFileWarning } from "../files/index.js";
import { AgentStateWriter, readAgentState, type AgentState } from "./agent-state.js";
import { resolveAgentConfig, type AgentOptions } from "./agent-config.js";
import { findMarkedProcesses } from "./find-marked-processes.js";
import { buildControlApi } from "./control-api.js";
import { WeightsPuller } from "./weights-puller.js";
import { loadEngineDrivers } from "./engine-drivers.js";
import { collectInventory } from "./inventory.js";
import { InventoryTracker } from "./inventory-tracker.js";
import type { ComfyuiSetup } from "./prepare-comfyui.js";
import { ReplicaSupervisor } from "./replica-supervisor.js";
import { getServerIdentity, postHeartbeat, postJoin } from "./server-client.js";
import { credentialFor, noCredentialError } from "./server-credential.js";
import { ServerSession } from "./server-session.js";
import { verifyingDispatcher } from "../net/index.js";

export type { AgentOptions } from "./agent-config.js";
export { heartbeatDelayMs } from "./server-session.js";

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
 * Starts a node agent: reads its state file, adopts the engines a previous
 * agent left running, serves the control API, and joins or heartbeats the
 * server (server-session.ts). This function only wires the parts together.
 */
export async function startAgent(options: AgentOptions): Promise<RunningAgent> {
  const logger = options.logger ?? pino({ name: "llmgw-agent" });
  const config = resolveAgentConfig(options);
  const { name, serverUrl, dataDirectory, stateFile, simulate } = config;
  const warnings = [ensurePrivateDirectory(dataDirectory), privateFileWarning(stateFile)].filter((warning) => warning !== undefined);
  for (const warning of warnings) logger.warn(warning);
  // The identity engines carry (LLMGW_AGENT_DIR): the same folder reached through a symbolic link is the same agent.
  const agentDirectory = await realpath(dataDirectory);

  const previous = await readAgentState(stateFile);
  // Keyed to the server's identity, not its URL: the same server at a new address keeps the node (server-credential.ts).
  const credential = credentialFor(previous, serverUrl);
  if (credential.credential === undefined && !options.joinToken) throw noCredentialError(name, serverUrl, stateFile, previous);
  const driverFor = options.driverFor ?? (await loadEngineDrivers());
  const enginePaths = options.enginePaths ?? {};
  const comfyui: ComfyuiSetup = { folder: enginePaths.comfyui ?? path.join(agentDirectory, "ComfyUI"), installCommand: options.comfyuiInstall };
  const inventory = await InventoryTracker.start(
    async (lastKnownCards) =>
      await collectInventory({
        hostname: os.hostname(),
        fabric: config.fabric,
        simulate,
        weightsDirectory: path.join(dataDirectory, "weights"),
        enginePaths,
        comfyui,
        builtinLlama: builtinLlamaInstall(),
        onWarning: (message) => logger.warn(message),
        lastKnownCards,
      }),
  );

  const stateWriter = new AgentStateWriter(stateFile);
  let closed = false;
  let session: ServerSession | undefined;
  const stateNow = (): AgentState => ({
    version: 1,
    server_url: credential.serverUrl,
    ...(credential.serverId !== undefined ? { server_id: credential.serverId } : {}),
    node_name: name,
    ...(credential.credential !== undefined ? { credential: credential.credential } : {}),
    ...(credential.controlSecretHash !== undefined ? { control_secret_hash: credential.controlSecretHash } : {}),
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
          cardClass: (index) => inventory.current.gpus.find((gpu) => gpu.index === index)?.class,
        }
      : undefined,
    enginePaths,
    builtinLlamaCommand: builtinLlamaInstall() !== undefined ? (options.llmgwCommand ?? llmgwCommand()) : undefined,
    comfyui,
    // ComfyUI was just installed: the next heartbeat reads the inventory again instead of in 30 s.
    onInventoryChanged: () => inventory.markStale(),
    engineHost: options.engineHost,
    hubUrl: config.hubUrl,
    hubToken: config.hubToken,
    startupTimeoutMs: config.startupTimeoutMs,
    stopGraceMs: config.stopGraceMs,
    drainTimeoutMs: config.drainTimeoutMs,
    healthPollMs: config.healthPollMs,
    headlessSettleMs: config.headlessSettleMs,
    logRotation: config.logRotation,
    terminalRetentionMs: config.terminalRetentionMs,
    logger,
    onChange: (kind) => {
      if (closed || kind !== "state") return;
      void persist();
      // A state change reaches the server within a fraction of a second, not at the next beat.
      session?.soon();
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
    hubUrl: config.hubUrl,
    hubToken: config.hubToken,
    pretend: simulate !== undefined && !(options.simulateFetch ?? false),
    logger,
  });
  const app = buildControlApi({
    supervisor,
    puller,
    nodeName: name,
    credential: () => credential.credential,
    controlSecretHash: () => credential.controlSecretHash,
    onChange: () => undefined,
    tls: options.tls,
    certificateLog: {
      renewed: (file) => logger.info({ file }, "tls-certificate-renewed: new connections get the new certificate"),
      failed: (message) => logger.warn(`tls-certificate-not-renewed: ${message}`),
    },
  });
  const serverDispatcher = verifyingDispatcher(options.ca);
  const { listen } = config;
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

  let resolveDone!: () => void;
  let rejectDone!: (error: unknown) => void;
  const done = new Promise<void>((resolve, reject) => {
    resolveDone = resolve;
    rejectDone = reject;
  });
  // Handled here so a refusal nobody awaits is not an unhandled rejection; awaiting `done` still sees it.
  done.catch(() => undefined);

  const close = async (error?: DomainError): Promise<void> => {
    if (closed) return;
    closed = true;
    session?.stop();
    await app.close();
    puller.close();
    await supervisor.close();
    // The last word on disk: what the next agent adopts.
    await stateWriter.write(stateNow()).catch(() => undefined);
    await stateWriter.flushed();
    if (error) rejectDone(error);
    else resolveDone();
  };

  const endpoint = { url: serverUrl, dispatcher: serverDispatcher };
  session = new ServerSession({
    name,
    serverUrl,
    joinToken: options.joinToken,
    address: url,
    fabric: config.fabric,
    fabricNetwork: config.fabricNetwork,
    labels: options.labels ?? {},
    heartbeatIntervalMs: config.heartbeatIntervalMs,
    simulated: simulate !== undefined,
    credential,
    stateFile,
    calls: { join: (body) => postJoin(endpoint, body), heartbeat: (held, body) => postHeartbeat(endpoint, held, body), identity: () => getServerIdentity(endpoint) },
    replicas: supervisor,
    inventory,
    persist,
    stopForGood: async (error) => {
      logger.error({ code: error.code, hint: error.hint }, error.message);
      await close(error);
    },
    logger,
  });
  const running = session;

  // The first contact runs before startAgent returns, so a refused token or a
  // server of another version fails the start itself, with its message.
  await running.beat();
// eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- a stop that came while the agent started sets it
  if (closed) {
    await done;
  }
  running.start();

  return {
    url,
    name,
    dataDirectory,
    warnings,
    supervisor,
    done,
    connected: running.connected,
    heartbeatNow: () => running.beat(),
    close: () => close(),
  };
}
