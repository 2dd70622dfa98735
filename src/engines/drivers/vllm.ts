import type { EngineDriver, EngineLaunch, EngineLaunchInput, EngineMetrics } from "../driver.js";
import { readEngineMetrics } from "../prometheus-text.js";
import { launchEnvironment } from "./launch-environment.js";
import { fabricInterfaceEnvironment, requireCards } from "./require-cards.js";
import { torchPrecisionArguments } from "./torch-precision-arguments.js";
import { vllmRuntimeLoraVariable } from "../runtime-adapters.js";

/**
 * vLLM's largest LoRA rank by default is 16, and an adapter of rank 32 or 64
 * (common on the Hub) then fails the whole engine at load. 64 loads those, at
 * the cost of larger LoRA buffers; an operator can still set it in args.
 */
export const vllmMaxLoraRank = 64;

/** `vllm serve` (https://docs.vllm.ai/en/latest/cli/serve.html). */
export const vllmDriver: EngineDriver = {
  engine: "vllm",
  metricsPath: "/metrics",
  program: "vllm",
  build(input: EngineLaunchInput): EngineLaunch {
    requireCards("vllm", input);
    const argv = [
      "vllm",
      "serve",
      input.weightsPath,
      "--host",
      input.host ?? "127.0.0.1",
      "--port",
      String(input.port),
      "--served-model-name",
      input.modelName,
      "--tensor-parallel-size",
      String(input.cards.length),
      "--gpu-memory-utilization",
      String(input.gpuMemoryUtilization),
    ];
    const distributed = input.distributed;
    if (distributed !== undefined && distributed.nodes > 1) {
      // Tensor parallel inside each node, one pipeline stage per node; every member runs `vllm serve`,
      // the workers headless (docs.vllm.ai: Parallelism and Scaling, multi-node without Ray).
      argv.push(
        "--pipeline-parallel-size",
        String(distributed.nodes),
        "--nnodes",
        String(distributed.nodes),
        "--node-rank",
        String(distributed.rank),
        "--master-addr",
        distributed.leaderAddress,
        "--master-port",
        String(distributed.port),
      );
      if (distributed.rank > 0) argv.push("--headless");
    }
    if (input.context !== undefined) argv.push("--max-model-len", String(input.context));
    argv.push(...torchPrecisionArguments(input.quantization));
    if (input.adapters.length > 0) {
      argv.push("--enable-lora", "--lora-modules", ...input.adapters.map((adapter) => `${adapter.name}=${adapter.path}`));
      argv.push("--max-lora-rank", String(vllmMaxLoraRank));
      // One adapter per batch is vLLM's default: requests for two adapters would take turns.
      if (input.adapters.length > 1) argv.push("--max-loras", String(input.adapters.length));
    }
    argv.push(...input.extraArgs);
    // vLLM reads VLLM_API_KEY like --api-key, and guards /v1 with it (not /health or /metrics, which the agent polls).
    // With LoRA enabled, adapters added later load into the running engine (POST /v1/load_lora_adapter) rather than by a restart.
    const runtimeLora: Record<string, string> = input.adapters.length > 0 ? { [vllmRuntimeLoraVariable]: "True" } : {};
    const env = { ...runtimeLora, ...launchEnvironment(input), ...fabricInterfaceEnvironment(input), ...(input.apiKey !== undefined ? { VLLM_API_KEY: input.apiKey } : {}) };
    // A headless worker (rank 1 and up) serves no HTTP, /health included: its readiness is its process running.
    const headless = distributed !== undefined && distributed.nodes > 1 && distributed.rank > 0;
    return { argv, env, healthPath: headless ? undefined : "/health", metricsPath: "/metrics" };
  },
  parseMetrics(text: string): EngineMetrics {
    return readEngineMetrics(text, {
      requestsRunning: ["vllm:num_requests_running"],
      requestsWaiting: ["vllm:num_requests_waiting"],
      // vLLM V1 renamed gpu_cache_usage_perc; both are 0..1 despite "perc".
      kvCacheUsage: ["vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"],
      promptTokensTotal: ["vllm:prompt_tokens_total"],
      generationTokensTotal: ["vllm:generation_tokens_total"],
    });
  },
};
