import type { Logger } from "pino";
import type { EngineName } from "../../catalog/index.js";
import type { EngineDriver } from "../../engines/index.js";
import type { EnginePaths } from "../inventory.js";
import type { ComfyuiSetup } from "../prepare-comfyui.js";
import type { LogRotation } from "../replica-log.js";

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
  /**
   * How to run `llmgw` ([node, ...flags, bin/llmgw.js]) for its built-in
   * llama.cpp engine, which runs a llamacpp replica on a node without
   * llama-server; undefined when node-llama-cpp is not installed.
   */
  readonly builtinLlamaCommand?: readonly string[] | undefined;
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
  /**
   * An engine that serves nothing to probe (a vLLM headless worker: its
   * driver gives no health path) is called ready once its process has run
   * this long; a worker that cannot load or reach its leader usually dies
   * within it, and one that dies later fails the replica as any engine does.
   */
  readonly headlessSettleMs: number;
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
