import { describe, expect, it } from "vitest";
import { vllmDriver } from "./vllm.js";
import { testLaunchInput } from "./test-launch-input.js";

describe("vLLM driver", () => {
  it("serves one card with the model's name, context and memory share", () => {
    const launch = vllmDriver.build(testLaunchInput({ quantization: "bf16" }));
    expect(launch.argv).toEqual([
      "vllm", "serve", "/var/lib/llmgw/weights/qwen2.5-7b",
      "--host", "127.0.0.1", "--port", "41001",
      "--served-model-name", "qwen2.5-7b",
      "--tensor-parallel-size", "1",
      "--gpu-memory-utilization", "0.9",
      "--max-model-len", "32768",
      "--dtype", "bfloat16",
    ]);
    expect(launch.env).toEqual({ CUDA_VISIBLE_DEVICES: "0" });
    expect(launch.healthPath).toBe("/health");
    expect(launch.metricsPath).toBe("/metrics");
  });

  it("runs tensor parallel over four cards with fp8 and the profile's args last", () => {
    const launch = vllmDriver.build(
      testLaunchInput({
        cards: [4, 5, 6, 7],
        context: undefined,
        quantization: "fp8",
        gpuMemoryUtilization: 0.85,
        extraArgs: ["--enable-prefix-caching", "--max-model-len", "8192"],
        extraEnv: { VLLM_LOGGING_LEVEL: "DEBUG" },
      }),
    );
    expect(launch.argv).toEqual([
      "vllm", "serve", "/var/lib/llmgw/weights/qwen2.5-7b",
      "--host", "127.0.0.1", "--port", "41001",
      "--served-model-name", "qwen2.5-7b",
      "--tensor-parallel-size", "4",
      "--gpu-memory-utilization", "0.85",
      "--quantization", "fp8",
      "--enable-prefix-caching", "--max-model-len", "8192",
    ]);
    expect(launch.env).toEqual({ VLLM_LOGGING_LEVEL: "DEBUG", CUDA_VISIBLE_DEVICES: "4,5,6,7" });
  });

  it("leaves the method of an int4 checkpoint to its own quantization config", () => {
    const launch = vllmDriver.build(testLaunchInput({ quantization: "int4" }));
    expect(launch.argv).not.toContain("--quantization");
    expect(launch.argv).not.toContain("--dtype");
  });

  it("names each LoRA adapter and lets several share a batch", () => {
    const launch = vllmDriver.build(
      testLaunchInput({
        adapters: [
          { name: "qwen-sql", path: "/var/lib/llmgw/adapters/qwen-sql" },
          { name: "qwen-legal", path: "/var/lib/llmgw/adapters/qwen-legal", scale: 0.5 },
        ],
      }),
    );
    expect(launch.argv).toEqual([
      "vllm", "serve", "/var/lib/llmgw/weights/qwen2.5-7b",
      "--host", "127.0.0.1", "--port", "41001",
      "--served-model-name", "qwen2.5-7b",
      "--tensor-parallel-size", "1",
      "--gpu-memory-utilization", "0.9",
      "--max-model-len", "32768",
      "--enable-lora",
      "--lora-modules", "qwen-sql=/var/lib/llmgw/adapters/qwen-sql", "qwen-legal=/var/lib/llmgw/adapters/qwen-legal",
      "--max-lora-rank", "64",
      "--max-loras", "2",
    ]);
    // So that adapters added later load into the running engine (POST /v1/load_lora_adapter).
    expect(launch.env.VLLM_ALLOW_RUNTIME_LORA_UPDATING).toBe("True");
  });

  it("leaves runtime LoRA loading off for a model without adapters", () => {
    expect(vllmDriver.build(testLaunchInput()).env.VLLM_ALLOW_RUNTIME_LORA_UPDATING).toBeUndefined();
  });

  it("refuses a placement without cards", () => {
    expect(() => vllmDriver.build(testLaunchInput({ cards: [] }))).toThrow(/runs only on GPUs/);
  });

  it("reads running, waiting, KV usage and token totals, old and new KV names alike", () => {
    const newer = vllmDriver.parseMetrics(
      [
        "# HELP vllm:num_requests_running Number of requests in model execution batches.",
        "# TYPE vllm:num_requests_running gauge",
        'vllm:num_requests_running{engine="0",model_name="qwen2.5-7b"} 3.0',
        'vllm:num_requests_waiting{engine="0",model_name="qwen2.5-7b"} 1.0',
        'vllm:kv_cache_usage_perc{engine="0",model_name="qwen2.5-7b"} 0.42',
        'vllm:prompt_tokens_total{engine="0",model_name="qwen2.5-7b"} 1234.0',
        'vllm:generation_tokens_total{engine="0",model_name="qwen2.5-7b"} 567.0',
      ].join("\n"),
    );
    expect(newer).toEqual({ requestsRunning: 3, requestsWaiting: 1, kvCacheUsage: 0.42, promptTokensTotal: 1234, generationTokensTotal: 567 });
    expect(vllmDriver.parseMetrics('vllm:gpu_cache_usage_perc{model_name="m"} 0.25').kvCacheUsage).toBe(0.25);
  });
});
