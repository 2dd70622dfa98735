import { EngineCannotRun } from "../../errors/engine-errors.js";
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
