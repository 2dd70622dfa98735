import { describeIssues, type EngineName } from "../../catalog/for-engines.js";
import { vllmRuntimeLoraVariable } from "../runtime-adapters.js";
import { parseEngineArgv, type SimEngineArguments } from "./parse-engine-argv.js";
import { simEngineAccess } from "./sim-engine-access.js";
import { simCrashExitCode, simFaultSchema, simLoadFailureExitCode, type SimFault } from "./sim-fault.js";
import { simEnvironmentVariables, simTimingFromEnvironment } from "./sim-timing.js";
import { EngineArgumentsInvalid } from "../../errors/for-engines.js";
import { sleep } from "./sim-clock.js";
import { SimulatedEngine } from "./simulated-engine.js";
import { parseGangArguments } from "./gang-arguments.js";
import { rendezvousTimeoutMs, startGangWorker } from "./gang-worker.js";
import { slowedByPipeline } from "./pipeline-timing.js";
import { RendezvousLeader } from "./rendezvous.js";

export interface SimEngineOptions {
  readonly engine: EngineName;
  /** The argv the engine's driver built, without argv[0]. */
  readonly argv: readonly string[];
  /** The engine's environment (the driver's env on top of the agent's); LLMGW_SIM_* are read here. */
  readonly environment?: Readonly<Record<string, string | undefined>>;
  /** Where log lines go: stdout by default, which the agent keeps as the replica's log. */
  readonly log?: (line: string) => void;
  /** How a crash ends the engine: process.exit by default; tests pass a recorder. */
  readonly exit?: (code: number) => void;
}

export interface SimEngineHandle {
  /** http://127.0.0.1:PORT, without a trailing slash. */
  readonly url: string;
  readonly port: number;
  readonly arguments: SimEngineArguments;
  /** The leader's rendezvous port, for a replica over several nodes (rank 0 only). */
  readonly rendezvousPort?: number;
  close(): Promise<void>;
}

/** Thrown by startSimEngine when a fault ended the engine before it served (only seen when `exit` returns, as in tests). */
export class SimEngineExited extends Error {
  constructor(readonly exitCode: number) {
    super(`the simulated engine exited with status ${exitCode} before serving`);
    this.name = "SimEngineExited";
  }
}

/**
 * Starts the simulated engine on 127.0.0.1 at the port its argv
 * names (0 picks a free one, for tests). It reads the same command line and
 * environment as the real engine, serves the OpenAI API for real, and acts
 * out faults on request. It never claims to be a real engine: models are
 * owned by "llmgw-sim" and its health says simulated.
 */
export async function startSimEngine(options: SimEngineOptions): Promise<SimEngineHandle> {
  const environment = options.environment ?? {};
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const exit = options.exit ?? ((code: number) => process.exit(code));
  const parsed = parseEngineArgv(options.engine, options.argv, environment);
  const cards = (environment["CUDA_VISIBLE_DEVICES"] ?? "").split(",").filter((card) => card.trim() !== "");
  const gang = parseGangArguments(options.engine, options.argv);
  const timing = slowedByPipeline(simTimingFromEnvironment(options.engine, environment, parsed.cardCount), gang?.pipelineStages ?? 1);
  const joinTimeoutMs = rendezvousTimeoutMs(options.engine, environment);
  const faultText = environment[simEnvironmentVariables.fault];
  let fault: SimFault = { kind: "none" };
  if (faultText !== undefined && faultText !== "") {
    const read = simFaultSchema.safeParse(faultText);
    if (!read.success) throw new EngineArgumentsInvalid(options.engine, `${simEnvironmentVariables.fault}: ${describeIssues(read.error.issues, "value")}`);
    fault = read.data;
  }
  const loadText = environment[simEnvironmentVariables.loadMilliseconds] ?? "0";
  const loadMilliseconds = Number(loadText);
  if (!Number.isFinite(loadMilliseconds) || loadMilliseconds < 0) {
    throw new EngineArgumentsInvalid(options.engine, `${simEnvironmentVariables.loadMilliseconds} must be milliseconds, 0 or more, got ${JSON.stringify(loadText)}`);
  }

  log(`llmgw sim-engine: simulated ${parsed.engine} (not a real engine) loading "${parsed.modelName}" from ${parsed.weightsPath}`);
  if (loadMilliseconds > 0) await sleep(loadMilliseconds);
  if (fault.kind === "fail-load") {
    log(`llmgw sim-engine: simulated failure while loading ${parsed.weightsPath}: CUDA out of memory (fault fail-load)`);
    exit(simLoadFailureExitCode);
    throw new SimEngineExited(simLoadFailureExitCode);
  }
  if (fault.kind === "crash-now") {
    log("llmgw sim-engine: simulated crash at start (fault crash-now)");
    exit(simCrashExitCode);
    throw new SimEngineExited(simCrashExitCode);
  }

  const access = simEngineAccess(options.engine, options.argv, environment);
  if (gang !== undefined && gang.rank > 0) {
    const worker = await startGangWorker({ engine: options.engine, gang, host: access.host, port: parsed.port, timeoutMs: joinTimeoutMs, log, exit });
    return { url: `http://127.0.0.1:${worker.port}`, port: worker.port, arguments: parsed, close: () => worker.close() };
  }
  const leader = gang === undefined ? undefined : await RendezvousLeader.open({ nodes: gang.nodes, address: gang.leaderAddress, port: gang.leaderPort, log });
  // As the real engines decide it: vLLM loads adapters at runtime only with LoRA enabled and its variable set; SGLang whenever LoRA is enabled.
  const loraEnabled = parsed.adapters.length > 0 || options.argv.includes("--enable-lora");
  const runtimeVariable = (environment[vllmRuntimeLoraVariable] ?? "").toLowerCase();
  const runtimeAdapters = loraEnabled && (parsed.engine === "sglang" || (parsed.engine === "vllm" && (runtimeVariable === "true" || runtimeVariable === "1")));
  const engine = new SimulatedEngine(parsed, cards, timing, fault, log, exit, access, runtimeAdapters, leader);
  let address: string;
  try {
    address = await engine.listen();
  } catch (error) {
    await leader?.close();
    throw error;
  }
  const port = Number(new URL(address).port);
  const adapterNames = parsed.adapters.map((adapter) => adapter.name);
  log(
    `llmgw sim-engine: simulated ${parsed.engine} serving "${parsed.modelName}"` +
      (adapterNames.length > 0 ? ` with adapters ${adapterNames.join(", ")}` : "") +
      ` on http://${access.host}:${port}${access.apiKey === undefined ? "" : " (API key required)"}; cards [${cards.join(",")}], ${parsed.concurrency} at once,` +
      ` context ${parsed.context ?? "engine default"}, decode ${timing.decodeTokensPerSecond.toFixed(0)} tokens/s (${timing.source}), speed ×${timing.speed}` +
      (fault.kind === "none" ? "" : `, fault ${fault.kind}`) +
      (leader === undefined ? "" : `; rank 0 of ${leader.nodes}, healthy once ${leader.nodes === 2 ? "rank 1 joins" : `ranks 1 to ${leader.nodes - 1} join`} at ${leader.address}:${leader.port}`),
  );
  const close = async () => {
    await leader?.close();
    await engine.close();
  };
  return { url: `http://127.0.0.1:${port}`, port, arguments: parsed, ...(leader === undefined ? {} : { rendezvousPort: leader.port }), close };
}
