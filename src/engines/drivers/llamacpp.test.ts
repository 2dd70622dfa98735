import { describe, expect, it } from "vitest";
import { llamaCppLoraSelection, llamacppDriver } from "./llamacpp.js";
import { testLaunchInput } from "./test-launch-input.js";

const gguf = "/var/lib/llmgw/weights/qwen2.5-7b-instruct-q4_k_m.gguf";

describe("llama.cpp driver", () => {
  it("gives two cards four slots of 8192 tokens each: --ctx-size 32768 --parallel 4, split by layer", () => {
    const launch = llamacppDriver.build(testLaunchInput({ weightsPath: gguf, cards: [2, 3], slots: 4, context: 8192 }));
    expect(launch.argv).toEqual([
      "llama-server", "--model", gguf,
      "--host", "127.0.0.1", "--port", "41001",
      "--alias", "qwen2.5-7b",
      "--ctx-size", "32768",
      "--parallel", "4",
      "--n-gpu-layers", "999",
      "--split-mode", "layer", "--tensor-split", "1,1",
      "--metrics",
    ]);
    expect(launch.env).toEqual({ CUDA_VISIBLE_DEVICES: "2,3" });
  });

  it("runs on the CPU with the profile's cores as threads and no card visible", () => {
    const launch = llamacppDriver.build(testLaunchInput({ weightsPath: gguf, cards: [], slots: 2, context: 4096, cpuCores: 8 }));
    expect(launch.argv).toEqual([
      "llama-server", "--model", gguf,
      "--host", "127.0.0.1", "--port", "41001",
      "--alias", "qwen2.5-7b",
      "--ctx-size", "8192",
      "--parallel", "2",
      "--n-gpu-layers", "0",
      "--threads", "8",
      "--metrics",
    ]);
    expect(launch.env).toEqual({ CUDA_VISIBLE_DEVICES: "" });
  });

  it("puts one card's layers all on it, without a split", () => {
    const launch = llamacppDriver.build(testLaunchInput({ weightsPath: gguf, cards: [1], context: undefined }));
    expect(launch.argv).toEqual([
      "llama-server", "--model", gguf,
      "--host", "127.0.0.1", "--port", "41001",
      "--alias", "qwen2.5-7b",
      "--parallel", "1",
      "--n-gpu-layers", "999",
      "--metrics",
    ]);
  });

  it("loads adapters with and without a scale, unapplied until a request asks", () => {
    const launch = llamacppDriver.build(
      testLaunchInput({
        weightsPath: gguf,
        adapters: [
          { name: "qwen-sql", path: "/a/qwen-sql.gguf" },
          { name: "qwen-legal", path: "/a/qwen-legal.gguf", scale: 0.5 },
        ],
        extraArgs: ["--ctx-size", "16384"],
      }),
    );
    expect(launch.argv).toEqual([
      "llama-server", "--model", gguf,
      "--host", "127.0.0.1", "--port", "41001",
      "--alias", "qwen2.5-7b",
      "--ctx-size", "32768",
      "--parallel", "1",
      "--n-gpu-layers", "999",
      "--lora", "/a/qwen-sql.gguf",
      "--lora", "/a/qwen-legal.gguf",
      "--lora-init-without-apply",
      "--metrics",
      "--ctx-size", "16384",
    ]);
  });

  it("selects one adapter per request by its position, the others at scale 0", () => {
    const adapters = [
      { name: "qwen-sql", path: "/a/qwen-sql.gguf" },
      { name: "qwen-legal", path: "/a/qwen-legal.gguf", scale: 0.5 },
    ];
    expect(llamaCppLoraSelection(adapters, "qwen-legal")).toEqual([{ id: 0, scale: 0 }, { id: 1, scale: 0.5 }]);
    expect(llamaCppLoraSelection(adapters, "qwen-sql")).toEqual([{ id: 0, scale: 1 }, { id: 1, scale: 0 }]);
    expect(llamaCppLoraSelection(adapters, undefined)).toEqual([{ id: 0, scale: 0 }, { id: 1, scale: 0 }]);
  });

  it("reads llama-server's metric names", () => {
    const metrics = llamacppDriver.parseMetrics(
      [
        "# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.",
        "# TYPE llamacpp:prompt_tokens_total counter",
        "llamacpp:prompt_tokens_total 6886",
        "llamacpp:tokens_predicted_total 3469",
        "llamacpp:kv_cache_usage_ratio 0.125",
        "llamacpp:requests_processing 2",
        "llamacpp:requests_deferred 1",
      ].join("\n"),
    );
    expect(metrics).toEqual({ requestsRunning: 2, requestsWaiting: 1, kvCacheUsage: 0.125, promptTokensTotal: 6886, generationTokensTotal: 3469 });
  });
});
