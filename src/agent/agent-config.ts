import os from "node:os";
import path from "node:path";
import type { Logger } from "pino";
import { DomainError } from "../errors/light.js";
import { describeIssues, parseListen } from "../catalog/for-agent.js";
import { oneNodeSpec, parseHardwareSpec, type HardwareSpec } from "../fleet/for-agent.js";
import { nodeNameSchema, type FabricNetwork } from "../protocol/for-agent.js";
import type { TlsFiles } from "../net/index.js";
import type { DriverLookup } from "./engine-drivers.js";
import { resolveFabricNetwork, type InterfaceTable } from "./fabric-network.js";
import type { EnginePaths } from "./inventory.js";
import type { ReplicaSupervisorOptions } from "./replicas/supervisor-options.js";
import { defaultLogRotation, type LogRotation } from "./replica-log.js";

export interface AgentOptions {
  /** The server's base URL, e.g. http://control:8080 */
  readonly server: string;
  /** Needed for the first join only: the credential it earns is kept in the data directory. */
  readonly joinToken?: string | undefined;
  /** Default: the host name. */
  readonly name?: string | undefined;
  /** Default: one fabric per node, named after it. */
  readonly fabric?: string | undefined;
  /** Where the node is reached on its fabric, for replicas over several nodes (--fabric-address); default: not reported. */
  readonly fabricAddress?: string | undefined;
  /** The interface of that address, when the machine does not hold the address itself (--fabric-interface). */
  readonly fabricInterface?: string | undefined;
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
  /** How long an engine that serves nothing to probe (a headless worker) must run before it is called ready. Default 5000. */
  readonly headlessSettleMs?: number | undefined;
  readonly logRotation?: LogRotation | undefined;
  /** How long stopped and failed replicas stay listed after being reported. Default 60000. */
  readonly terminalRetentionMs?: number | undefined;
  /** Default: src/engines/drivers. Tests give a stand-in. */
  readonly driverFor?: DriverLookup | undefined;
  /** How to run `llmgw` for the simulated engine. Default: this node binary and the package's bin/llmgw.js. */
  readonly llmgwCommand?: readonly string[] | undefined;
  readonly logger?: Logger | undefined;
}

/** The agent's settings, checked and with every default filled in once: nothing below reads options or the environment again. */
/** The supervisor's settings, as the agent passes them on unchanged. */
type SupervisorSettings = Pick<ReplicaSupervisorOptions, "hubUrl" | "hubToken" | "startupTimeoutMs" | "stopGraceMs" | "drainTimeoutMs" | "healthPollMs" | "headlessSettleMs" | "logRotation" | "terminalRetentionMs">;

export interface AgentConfig extends SupervisorSettings {
  readonly name: string;
  /** The server's URL as given, normalised by the URL parser (a trailing slash added). */
  readonly serverUrl: string;
  readonly fabric: string;
  /** Sent in the join and on every heartbeat; undefined when --fabric-address was not given. */
  readonly fabricNetwork: FabricNetwork | undefined;
  /** Absolute, as given (symbolic links kept: warnings name the folder the operator typed). */
  readonly dataDirectory: string;
  readonly stateFile: string;
  readonly simulate: HardwareSpec | undefined;
  readonly listen: { readonly host: string; readonly port: number };
  readonly heartbeatIntervalMs: number;
}

/** Hugging Face's hub, where hf:// sources come from unless --hf-endpoint or HF_ENDPOINT names a mirror. */
export const defaultHubUrl = "https://huggingface.co";

export function defaultNodeName(hostname: string = os.hostname()): string {
  const cleaned = hostname.split(".")[0]?.replace(/[^A-Za-z0-9._-]/g, "-").replace(/^[^A-Za-z0-9]+/, "") ?? "";
  return (cleaned || "node").slice(0, 63);
}

/** Refuses a bad name, server URL, listen address, fabric address or hardware description before anything starts, naming the flag. */
export function resolveAgentConfig(
  options: AgentOptions,
  environment: NodeJS.ProcessEnv = process.env,
  hostname: string = os.hostname(),
  interfaces: InterfaceTable = os.networkInterfaces(),
): AgentConfig {
  const nameResult = nodeNameSchema.safeParse(options.name ?? defaultNodeName(hostname));
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
  const dataDirectory = path.resolve(options.dataDirectory ?? "llmgw-agent-data");
  return {
    name,
    serverUrl,
    fabric: options.fabric ?? name,
    fabricNetwork: resolveFabricNetwork(options.fabricAddress, options.fabricInterface, interfaces),
    dataDirectory,
    stateFile: path.join(dataDirectory, "agent-state.json"),
    simulate: options.simulate !== undefined ? oneNodeSpec(parseHardwareSpec(options.simulate), options.simulate) : undefined,
    listen: parseListen(options.listen ?? "127.0.0.1:0", "--listen"),
    hubUrl: options.hubUrl ?? environment.HF_ENDPOINT ?? defaultHubUrl,
    hubToken: options.hubToken ?? environment.HF_TOKEN,
    heartbeatIntervalMs: options.heartbeatIntervalMs ?? 2000,
    startupTimeoutMs: options.startupTimeoutMs ?? 30 * 60_000,
    stopGraceMs: options.stopGraceMs ?? 30_000,
    drainTimeoutMs: options.drainTimeoutMs ?? 60_000,
    healthPollMs: options.healthPollMs ?? 500,
    headlessSettleMs: options.headlessSettleMs ?? 5000,
    logRotation: options.logRotation ?? defaultLogRotation,
    terminalRetentionMs: options.terminalRetentionMs ?? 60_000,
  };
}
