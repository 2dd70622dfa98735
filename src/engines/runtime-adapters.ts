import type { EngineName } from "../catalog/index.js";

/**
 * Which engines load LoRA adapters into a running server, and how to ask:
 * - vLLM: POST /v1/load_lora_adapter and /v1/unload_lora_adapter, when it
 *   runs with LoRA enabled (--enable-lora) and VLLM_ALLOW_RUNTIME_LORA_UPDATING=True
 *   (the vLLM driver sets both when the model has adapters at start);
 * - SGLang: POST /load_lora_adapter and /unload_lora_adapter, when LoRA is
 *   enabled (adapters at start, or --enable-lora) and its buffers have a
 *   known rank (--max-lora-rank): without it SGLang sizes them from the
 *   adapters it started with, and a larger rank would fail inside the engine;
 * - llama-server loads adapters only at start (its /lora-adapters sets the
 *   scales of those), so a change restarts its replicas.
 */

/** The flag's value when the profile's args set it (the last one wins, as argparse reads it). */
export function flagValue(args: readonly string[], flag: string): string | undefined {
  let value: string | undefined;
  for (const [index, argument] of args.entries()) {
    if (argument === flag) value = args[index + 1];
    else if (argument.startsWith(`${flag}=`)) value = argument.slice(flag.length + 1);
  }
  return value;
}

/** Whether an engine started with these adapters and args takes another adapter without a restart. */
export function loadsAdaptersAtRuntime(engine: EngineName, startedWith: { readonly adapters: number; readonly args: readonly string[] }): boolean {
  const loraEnabled = startedWith.adapters > 0 || startedWith.args.includes("--enable-lora");
  if (engine === "vllm") return startedWith.adapters > 0;
  if (engine === "sglang") return loraEnabled && flagValue(startedWith.args, "--max-lora-rank") !== undefined;
  return false;
}

/** A request to a running engine: the path to POST and its JSON body. */
export interface EngineRequest {
  readonly path: string;
  readonly body: Readonly<Record<string, string>>;
}

/** How to load and unload adapters in a running engine; undefined for an engine that cannot. */
export function runtimeAdapterEndpoints(engine: EngineName): { load(name: string, path: string): EngineRequest; unload(name: string): EngineRequest } | undefined {
  const prefix = engine === "vllm" ? "/v1" : engine === "sglang" ? "" : undefined;
  if (prefix === undefined) return undefined;
  return {
    load: (name, path) => ({ path: `${prefix}/load_lora_adapter`, body: { lora_name: name, lora_path: path } }),
    unload: (name) => ({ path: `${prefix}/unload_lora_adapter`, body: { lora_name: name } }),
  };
}

/** vLLM reads this to allow runtime loading; its value as vLLM's docs write it. */
export const vllmRuntimeLoraVariable = "VLLM_ALLOW_RUNTIME_LORA_UPDATING";
