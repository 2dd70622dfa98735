import type { EngineName } from "../catalog/index.js";

/**
 * The contract every engine driver keeps. A driver is pure: it turns
 * what the control plane decided into a command line, and reads the engine's
 * metrics text back. It starts nothing; the agent does that.
 */
export interface EngineLaunchInput {
  /** The name clients ask for; engines serve it under this name. */
  readonly modelName: string;
  /** Where the agent put the weights: a folder (safetensors) or a file (GGUF). */
  readonly weightsPath: string;
  /** GPU indices on this node, as nvidia-smi numbers them; empty for a CPU replica. */
  readonly cards: readonly number[];
  readonly port: number;
  /**
   * Where the engine listens: 127.0.0.1 unless the agent was told the
   * gateways reach its engines from other machines (--engine-host).
   */
  readonly host?: string | undefined;
  /**
   * The replica's API key: only gateways hold it. Each driver passes it the
   * way its engine reads it, by environment where the engine has a variable
   * (so it stays out of `ps` and of the replica log's start line).
   */
  readonly apiKey?: string | undefined;
  /** Tokens one request may use; undefined leaves the engine's own default. */
  readonly context: number | undefined;
  /** Requests served at once (llama.cpp's slots); 1 when the profile says nothing. */
  readonly slots: number;
  /** Host CPU cores the profile reserves (llama.cpp --threads). */
  readonly cpuCores: number | undefined;
  /** The share of each card the engine may take (vLLM --gpu-memory-utilization, SGLang --mem-fraction-static). */
  readonly gpuMemoryUtilization: number;
  readonly quantization: string | undefined;
  readonly adapters: readonly { readonly name: string; readonly path: string; readonly scale?: number | undefined }[];
  /** The profile's extra arguments, appended last so an operator can override a generated flag. */
  readonly extraArgs: readonly string[];
  readonly extraEnv: Readonly<Record<string, string>>;
  /**
   * Where the engine is installed when it is a folder rather than a program on
   * PATH (ComfyUI's checkout, which is started as `python3 FOLDER/main.py`).
   * Unused by the other engines.
   */
  readonly enginePath?: string | undefined;
  /**
   * Set when the replica spans nodes: this member's place in the gang.
   * Only vLLM and SGLang take it; the engines' own distributed runtimes
   * rendezvous at the leader, with no launcher of llmgw's between the ranks.
   */
  readonly distributed?: DistributedLaunch | undefined;
}

/** One member of a replica over several nodes, as its engine is told. */
export interface DistributedLaunch {
  /** Nodes the replica spans. */
  readonly nodes: number;
  /** This member's node rank: 0 is the leader, which serves the API. */
  readonly rank: number;
  /** The leader's address on the fabric the members share. */
  readonly leaderAddress: string;
  /** The rendezvous port the leader's agent reserved. */
  readonly port: number;
  /** The network interface that address is on (NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME); undefined when the agent reports none. */
  readonly networkInterface?: string | undefined;
}

export interface EngineLaunch {
  /** argv[0] is the program (looked up on PATH, or an absolute path). */
  readonly argv: readonly string[];
  /** Added to the agent's environment; CUDA_VISIBLE_DEVICES is always set here. */
  readonly env: Readonly<Record<string, string>>;
  /**
   * GET this path on 127.0.0.1:port; 200 means ready to serve. Undefined when
   * the engine serves no HTTP at all (a vLLM headless worker): nothing answers
   * there, so the agent calls it ready once its process has kept running.
   */
  readonly healthPath: string | undefined;
  /**
   * GET this path on 127.0.0.1:port and give the body to the driver's
   * parseMetrics. Engines disagree on where (vLLM /metrics, trtllm-serve
   * /prometheus/metrics, ComfyUI has only its JSON /queue), so the driver says.
   */
  readonly metricsPath: string;
}

/** What llmgw reads from an engine's /metrics, whatever the engine calls it. */
export interface EngineMetrics {
  readonly requestsRunning: number | undefined;
  readonly requestsWaiting: number | undefined;
  /** 0..1 */
  readonly kvCacheUsage: number | undefined;
  readonly promptTokensTotal: number | undefined;
  readonly generationTokensTotal: number | undefined;
}

export interface EngineDriver {
  readonly engine: EngineName;
  /** The program the agent looks for on PATH to say the engine is installed. */
  readonly program: string;
  build(input: EngineLaunchInput): EngineLaunch;
  /** Where the engine serves what parseMetrics reads, as every launch of it says: gateways read it too, without a launch at hand. */
  readonly metricsPath: string;
  parseMetrics(text: string): EngineMetrics;
}
