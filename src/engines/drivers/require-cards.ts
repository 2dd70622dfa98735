import { EngineCannotRun } from "../../errors/for-engines.js";
import type { EngineLaunchInput } from "../driver.js";

/** GPU-only engines (vLLM, SGLang, trtllm-serve) refuse a placement with no cards rather than start and fail on a CUDA error. */
export function requireCards(engine: string, input: EngineLaunchInput): void {
  if (input.cards.length === 0) {
    throw new EngineCannotRun(
      engine,
      "it runs only on GPUs and the placement gave it no cards",
      "Give the profile `gpus: 1` or more, or use the llamacpp engine for a CPU replica.",
    );
  }
}

/** Engines that cannot span nodes here refuse a member's launch rather than start alone on part of a model. */
export function requireOneNode(engine: string, input: EngineLaunchInput): void {
  if (input.distributed !== undefined && input.distributed.nodes > 1) {
    throw new EngineCannotRun(engine, `it cannot run one replica over ${input.distributed.nodes} nodes here`, "Run replicas over several nodes with vllm or sglang, or give the profile nodes: 1.");
  }
}

/**
 * The environment that points NCCL's and Gloo's sockets at the fabric's
 * interface, so the ranks do not pick a management or loopback interface
 * and time out. Empty when the agent reported no interface.
 */
export function fabricInterfaceEnvironment(input: EngineLaunchInput): Record<string, string> {
  const name = input.distributed?.networkInterface;
  return name !== undefined && name.length > 0 ? { NCCL_SOCKET_IFNAME: name, GLOO_SOCKET_IFNAME: name } : {};
}
