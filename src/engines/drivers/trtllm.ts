import { AdaptersUnsupported } from "../../errors/engine-errors.js";
import type { EngineDriver, EngineLaunch, EngineLaunchInput, EngineMetrics } from "../driver.js";
import { readEngineMetrics } from "../prometheus-text.js";
import { launchEnvironment } from "./launch-environment.js";
import { requireCards, requireOneNode } from "./require-cards.js";

/**
 * `trtllm-serve` (https://nvidia.github.io/TensorRT-LLM/commands/trtllm-serve/).
 * The PyTorch backend takes a Hugging Face folder as it is, which is what the
 * agent fetches. Quantization is not a flag here: the checkpoint's own
 * quantization config (ModelOpt) decides. Its Prometheus text is at
 * /prometheus/metrics (its /metrics is JSON iteration stats).
 */
export const trtllmDriver: EngineDriver = {
  engine: "trtllm",
  metricsPath: "/prometheus/metrics",
  program: "trtllm-serve",
  build(input: EngineLaunchInput): EngineLaunch {
    requireOneNode("trtllm", input);
    requireCards("trtllm", input);
    if (input.adapters.length > 0) {
      // trtllm-serve takes LoRA only through a YAML options file; a pure driver writes no files.
      throw new AdaptersUnsupported("trtllm", "trtllm-serve takes LoRA adapters only from a YAML options file");
    }
    const argv = [
      "trtllm-serve",
      input.weightsPath,
      "--host",
      input.host ?? "127.0.0.1",
      "--port",
      String(input.port),
      "--backend",
      "pytorch",
      "--served_model_name",
      input.modelName,
      "--tp_size",
      String(input.cards.length),
      // Its fraction is of the memory left after the weights, not of the card;
      // the planner's share is the closest setting it has.
      "--kv_cache_free_gpu_memory_fraction",
      String(input.gpuMemoryUtilization),
    ];
    if (input.context !== undefined) argv.push("--max_seq_len", String(input.context));
    argv.push(...input.extraArgs);
    return { argv, env: launchEnvironment(input), healthPath: "/health", metricsPath: "/prometheus/metrics" };
  },
  parseMetrics(text: string): EngineMetrics {
    // Releases have used both the trtllm_ and the trtllm: prefix. It exports
    // no running/waiting gauges and no token counters in Prometheus form.
    return readEngineMetrics(text, {
      requestsRunning: [],
      requestsWaiting: [],
      kvCacheUsage: ["trtllm_kv_cache_utilization", "trtllm:kv_cache_utilization"],
      promptTokensTotal: [],
      generationTokensTotal: [],
    });
  },
};
