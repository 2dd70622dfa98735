import { InvalidArgumentError, type Command } from "commander";
import { engineNames, type EngineName } from "../catalog/light.js";

function engineName(value: string): EngineName {
  const engine = engineNames.find((name) => name === value);
  if (engine === undefined) throw new InvalidArgumentError(`one of ${engineNames.join(", ")}`);
  return engine;
}

/**
 * `llmgw sim-engine --engine ENGINE -- ARGS...`: the simulated engine,
 * started by the agent in place of a real engine with the argv the
 * engine's driver built (without argv[0]) and the same environment.
 */
export function registerSimEngineCommand(program: Command): void {
  program
    .command("sim-engine")
    .summary("run the simulated engine in place of a real one")
    .description(
      "Serve the OpenAI API as ENGINE would, from the command line its driver built (everything after --), " +
        "for tests, the demo and benchmarks. It is never a real engine. " +
        "Timing: LLMGW_SIM_WEIGHTS_BYTES_PER_CARD with LLMGW_SIM_GPU_CLASS or LLMGW_SIM_BANDWIDTH_GBPS; LLMGW_SIM_SPEED divides every delay. " +
        "Faults: LLMGW_SIM_FAULT=crash-now | crash-after:N | stall | error-500 | fail-load, or POST /sim/fault {\"fault\": ...}.",
    )
    .requiredOption("--engine <engine>", `the engine to simulate: ${engineNames.join(", ")}`, engineName)
    .argument("[engine-arguments...]", "the engine's arguments, after --")
    .action(async (engineArguments: string[], options: { engine: EngineName }) => {
      // Loaded when run: the command tree is built by every `llmgw` start.
      const { runSimEngine } = await import("../engines/sim-process.js");
      await runSimEngine({ engine: options.engine, argv: engineArguments });
    });
}
