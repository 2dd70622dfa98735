import type { EngineDriver, EngineLaunch, EngineLaunchInput, EngineMetrics } from "../driver.js";
import { readEngineMetrics } from "../prometheus-text.js";
import { launchEnvironment } from "./launch-environment.js";
import { fabricInterfaceEnvironment, requireCards } from "./require-cards.js";
import { torchPrecisionArguments } from "./torch-precision-arguments.js";

/**
 * `python3 -m sglang.launch_server`
 * (https://docs.sglang.io/advanced_features/server_arguments.html).
 * python3 rather than python: Debian and Ubuntu ship no `python` unless asked.
 * --tp-size is the documented spelling (`--tp` only works as an argparse
 * abbreviation). --enable-metrics, because SGLang serves no /metrics without it.
 */
export const sglangDriver: EngineDriver = {
  engine: "sglang",
  metricsPath: "/metrics",
  program: "python3",
  build(input: EngineLaunchInput): EngineLaunch {
    requireCards("sglang", input);
    const argv = [
      "python3",
      "-m",
      "sglang.launch_server",
      "--model-path",
      input.weightsPath,
      "--host",
      input.host ?? "127.0.0.1",
      "--port",
      String(input.port),
      "--served-model-name",
      input.modelName,
      "--tp-size",
      // Over several nodes SGLang makes one tensor-parallel group of every member's cards.
      String(input.cards.length * Math.max(1, input.distributed?.nodes ?? 1)),
      "--mem-fraction-static",
      String(input.gpuMemoryUtilization),
    ];
    const distributed = input.distributed;
    if (distributed !== undefined && distributed.nodes > 1) {
      argv.push("--nnodes", String(distributed.nodes), "--node-rank", String(distributed.rank), "--dist-init-addr", `${distributed.leaderAddress}:${distributed.port}`);
    }
    if (input.context !== undefined) argv.push("--context-length", String(input.context));
    argv.push(...torchPrecisionArguments(input.quantization));
    if (input.adapters.length > 0) {
      // NAME=PATH names the adapter; requests pick it by that name.
      argv.push("--lora-paths", ...input.adapters.map((adapter) => `${adapter.name}=${adapter.path}`));
    }
    argv.push("--enable-metrics", ...input.extraArgs);
    // SGLang takes its key only as --api-key (no environment variable), so it is on the command line:
    // the replica log masks it, but a user on the node can see it in `ps`.
    if (input.apiKey !== undefined) argv.push("--api-key", input.apiKey);
    return { argv, env: { ...launchEnvironment(input), ...fabricInterfaceEnvironment(input) }, healthPath: "/health", metricsPath: "/metrics" };
  },
  parseMetrics(text: string): EngineMetrics {
    return readEngineMetrics(text, {
      requestsRunning: ["sglang:num_running_reqs"],
      requestsWaiting: ["sglang:num_queue_reqs"],
      kvCacheUsage: ["sglang:token_usage"],
      promptTokensTotal: ["sglang:prompt_tokens_total"],
      generationTokensTotal: ["sglang:generation_tokens_total"],
    });
  },
};
