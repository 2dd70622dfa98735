import { describe, expect, it } from "vitest";
import { trtllmDriver } from "./trtllm.js";
import { testLaunchInput } from "./test-launch-input.js";

describe("TensorRT-LLM driver", () => {
  it("serves a Hugging Face folder on the PyTorch backend", () => {
    const launch = trtllmDriver.build(testLaunchInput());
    expect(launch.argv).toEqual([
      "trtllm-serve", "/var/lib/llmgw/weights/qwen2.5-7b",
      "--host", "127.0.0.1", "--port", "41001",
      "--backend", "pytorch",
      "--served_model_name", "qwen2.5-7b",
      "--tp_size", "1",
      "--kv_cache_free_gpu_memory_fraction", "0.9",
      "--max_seq_len", "32768",
    ]);
    expect(launch.metricsPath).toBe("/prometheus/metrics");
  });

  it("runs tensor parallel over four cards", () => {
    const launch = trtllmDriver.build(testLaunchInput({ cards: [0, 1, 2, 3], context: undefined, extraArgs: ["--max_batch_size", "64"] }));
    expect(launch.argv).toEqual([
      "trtllm-serve", "/var/lib/llmgw/weights/qwen2.5-7b",
      "--host", "127.0.0.1", "--port", "41001",
      "--backend", "pytorch",
      "--served_model_name", "qwen2.5-7b",
      "--tp_size", "4",
      "--kv_cache_free_gpu_memory_fraction", "0.9",
      "--max_batch_size", "64",
    ]);
    expect(launch.env).toEqual({ CUDA_VISIBLE_DEVICES: "0,1,2,3" });
  });

  it("refuses LoRA adapters, naming the engine", () => {
    expect(() => trtllmDriver.build(testLaunchInput({ adapters: [{ name: "x", path: "/x" }] }))).toThrow(/trtllm cannot serve LoRA adapters/);
  });

  it("reads KV cache utilization under either prefix", () => {
    expect(trtllmDriver.parseMetrics('trtllm_kv_cache_utilization{model_name="m"} 0.5').kvCacheUsage).toBe(0.5);
    expect(trtllmDriver.parseMetrics('trtllm:kv_cache_utilization{model_name="m"} 0.25').kvCacheUsage).toBe(0.25);
  });
});
