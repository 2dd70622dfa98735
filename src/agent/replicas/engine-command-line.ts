import type { EngineDriver, EngineLaunch } from "../../engines/index.js";
import { DomainError } from "../../errors/light.js";
import type { ReplicaSpec } from "../../protocol/index.js";
import { markerVariables } from "../engine-marker.js";
import { findProgram } from "../inventory.js";
import type { ReplicaSupervisorOptions } from "./supervisor-options.js";

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

export function engineInheritedEnvironment(): NodeJS.ProcessEnv {
  const environment = { ...process.env };
  // A marker the agent inherited (started from an engine's shell) would make its engines look like another's.
  for (const name of [...agentSecrets, ...Object.values(markerVariables)]) delete environment[name];
  return environment;
}

/**
 * The command that runs: the driver's own, the simulated engine given the
 * driver's arguments, or, for llamacpp on a node without llama-server,
 * llmgw's built-in llama.cpp engine given them.
 */
export async function engineCommandLine(
  options: Pick<ReplicaSupervisorOptions, "simulation" | "nodeName" | "enginePaths" | "builtinLlamaCommand">,
  spec: ReplicaSpec,
  driver: EngineDriver,
  launch: EngineLaunch,
): Promise<{ argv: string[]; env: Record<string, string> }> {
  const env: Record<string, string> = { ...launch.env };
  // Every engine sees only its own cards; a driver that forgot would let it grab every card on the node.
  if (!("CUDA_VISIBLE_DEVICES" in env)) env.CUDA_VISIBLE_DEVICES = spec.cards.join(",");
  const simulation = options.simulation;
  if (simulation) {
    const firstCard = spec.cards[0];
    const cardClass = firstCard !== undefined ? simulation.cardClass(firstCard) : undefined;
    const hints: Record<string, string> = {
      LLMGW_SIM_NODE: options.nodeName,
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
  const configured = spec.engine === "comfyui" ? undefined : options.enginePaths[spec.engine];
  const wanted = configured !== undefined && program === driver.program ? configured : program;
  const found = wanted === undefined ? undefined : await findProgram(wanted, env.PATH ?? process.env.PATH);
  const builtin = options.builtinLlamaCommand;
  if (found === undefined && spec.engine === "llamacpp" && configured === undefined && program === driver.program && builtin !== undefined) {
    // No llama-server here: llama.cpp runs in llmgw's own engine process, from the same command line.
    return { argv: [...builtin, "llama-engine", "--", ...args], env };
  }
  if (found === undefined) {
    throw new DomainError(
      "engine_missing",
      `engine ${spec.engine} is not installed on node ${options.nodeName}: program "${wanted ?? ""}" was not found${wanted?.includes("/") ? "" : " on PATH"}`,
      `Install ${spec.engine} on ${options.nodeName} (or start the agent with --engine-path ${spec.engine}=PATH), or place the replica on a node whose inventory lists ${spec.engine}.`,
    );
  }
  return { argv: [found, ...args], env };
}
