import type { EngineName } from "../../catalog/index.js";
import { splitArguments } from "./parse-engine-argv.js";

/** The variable each engine reads its API key from, as the real engines do; SGLang and trtllm-serve have none. */
export const engineApiKeyVariables: Partial<Record<EngineName, string>> = {
  vllm: "VLLM_API_KEY",
  llamacpp: "LLAMA_API_KEY",
};

/**
 * Where the simulated engine listens and the key it demands, read as the real
 * engine reads them: --host (ComfyUI's --listen), and --api-key or the
 * engine's own variable. A key left out means no key is asked for, as with the
 * real engines.
 */
export function simEngineAccess(
  engine: EngineName,
  argv: readonly string[],
  environment: Readonly<Record<string, string | undefined>>,
): { host: string; apiKey: string | undefined } {
  const { flags } = splitArguments(argv, {
    host: { names: engine === "comfyui" ? ["--listen"] : ["--host"], kind: "value" },
    apiKey: { names: ["--api-key"], kind: "value" },
  });
  const variable = engineApiKeyVariables[engine];
  const fromEnvironment = variable === undefined ? undefined : environment[variable];
  const apiKey = flags.get("apiKey")?.[0] ?? (fromEnvironment === "" ? undefined : fromEnvironment);
  return { host: flags.get("host")?.[0] ?? "127.0.0.1", apiKey };
}
