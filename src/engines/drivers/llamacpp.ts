import type { EngineDriver, EngineLaunch, EngineLaunchInput, EngineMetrics } from "../driver.js";
import { requireOneNode } from "./require-cards.js";
import { readEngineMetrics } from "../prometheus-text.js";
import { launchEnvironment } from "./launch-environment.js";

/**
 * More layers than any model has: llama.cpp clamps it, so every layer goes to
 * the cards. ("all" is newer than many installed builds.)
 */
const allLayers = "999";

/**
 * `llama-server` (https://github.com/ggml-org/llama.cpp/tree/master/tools/server).
 *
 * --ctx-size is the KV cache of all slots together: each of the --parallel
 * slots gets ctx-size / parallel, so a model with context C and S slots needs
 * S × C for every request to have its full context.
 *
 * Several cards are split by layer (llama.cpp's pipeline split; its row split
 * is slower on most machines), in equal shares since the placement gives cards
 * of one class.
 *
 * Adapters are loaded with --lora-init-without-apply: llama-server otherwise
 * applies every loaded adapter to every request, so the base model's own
 * requests would be answered by the adapters. A request chooses its adapter
 * with the `lora` field; llamaCppLoraSelection builds it.
 */
export const llamacppDriver: EngineDriver = {
  engine: "llamacpp",
  metricsPath: "/metrics",
  program: "llama-server",
  build(input: EngineLaunchInput): EngineLaunch {
    requireOneNode("llamacpp", input);
    const argv = [
      "llama-server",
      "--model",
      input.weightsPath,
      "--host",
      input.host ?? "127.0.0.1",
      "--port",
      String(input.port),
      "--alias",
      input.modelName,
    ];
    if (input.context !== undefined) argv.push("--ctx-size", String(input.context * input.slots));
    argv.push("--parallel", String(input.slots));
    argv.push("--n-gpu-layers", input.cards.length > 0 ? allLayers : "0");
    if (input.cards.length > 1) {
      argv.push("--split-mode", "layer", "--tensor-split", input.cards.map(() => "1").join(","));
    }
    if (input.cpuCores !== undefined) argv.push("--threads", String(Math.max(1, Math.floor(input.cpuCores))));
    // Every adapter loads unapplied (scale 0) and each request picks its own and
    // its scale (llamaCppLoraSelection), so a profile's scale never needs
    // --lora-scaled, whose FNAME:SCALE form also breaks on paths with a colon.
    for (const adapter of input.adapters) argv.push("--lora", adapter.path);
    if (input.adapters.length > 0) argv.push("--lora-init-without-apply");
    // llama-server serves /metrics only when asked.
    argv.push("--metrics", ...input.extraArgs);
    // llama-server reads LLAMA_API_KEY like --api-key; /health and /metrics stay open to the agent.
    const env = { ...launchEnvironment(input), ...(input.apiKey !== undefined ? { LLAMA_API_KEY: input.apiKey } : {}) };
    return { argv, env, healthPath: "/health", metricsPath: "/metrics" };
  },
  parseMetrics(text: string): EngineMetrics {
    return readEngineMetrics(text, {
      requestsRunning: ["llamacpp:requests_processing"],
      requestsWaiting: ["llamacpp:requests_deferred"],
      // Dropped from recent builds; read when present.
      kvCacheUsage: ["llamacpp:kv_cache_usage_ratio"],
      promptTokensTotal: ["llamacpp:prompt_tokens_total"],
      generationTokensTotal: ["llamacpp:tokens_predicted_total"],
    });
  },
};

/**
 * The `lora` field of a llama-server request that uses `adapterName` (or no
 * adapter, when undefined). Adapters are numbered in the order of their
 * --lora flags. Every adapter is listed, the others at scale 0, so a request
 * never inherits the scale another request set on its slot.
 */
export function llamaCppLoraSelection(
  adapters: EngineLaunchInput["adapters"],
  adapterName: string | undefined,
): { id: number; scale: number }[] {
  return adapters.map((adapter, index) => ({
    id: index,
    scale: adapter.name === adapterName ? (adapter.scale ?? 1) : 0,
  }));
}
