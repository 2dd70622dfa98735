import { describe, expect, it } from "vitest";
import { sglangDriver } from "./sglang.js";
import { testLaunchInput } from "./test-launch-input.js";

describe("SGLang driver", () => {
  it("serves one card with metrics enabled", () => {
    const launch = sglangDriver.build(testLaunchInput());
    expect(launch.argv).toEqual([
      "python3", "-m", "sglang.launch_server",
      "--model-path", "/var/lib/llmgw/weights/qwen2.5-7b",
      "--host", "127.0.0.1", "--port", "41001",
      "--served-model-name", "qwen2.5-7b",
      "--tp-size", "1",
      "--mem-fraction-static", "0.9",
      "--context-length", "32768",
      "--enable-metrics",
    ]);
    expect(launch.env).toEqual({ CUDA_VISIBLE_DEVICES: "0" });
  });

  it("runs tensor parallel over four cards with named LoRA adapters and the profile's args last", () => {
    const launch = sglangDriver.build(
      testLaunchInput({
        cards: [0, 1, 2, 3],
        quantization: "awq",
        adapters: [{ name: "qwen-sql", path: "/a/qwen-sql" }, { name: "qwen-legal", path: "/a/qwen-legal", scale: 2 }],
        extraArgs: ["--mem-fraction-static", "0.8"],
      }),
    );
    expect(launch.argv).toEqual([
      "python3", "-m", "sglang.launch_server",
      "--model-path", "/var/lib/llmgw/weights/qwen2.5-7b",
      "--host", "127.0.0.1", "--port", "41001",
      "--served-model-name", "qwen2.5-7b",
      "--tp-size", "4",
      "--mem-fraction-static", "0.9",
      "--context-length", "32768",
      "--quantization", "awq",
      "--lora-paths", "qwen-sql=/a/qwen-sql", "qwen-legal=/a/qwen-legal",
      "--enable-metrics",
      "--mem-fraction-static", "0.8",
    ]);
    expect(launch.env).toEqual({ CUDA_VISIBLE_DEVICES: "0,1,2,3" });
  });

  it("reads its own metric names", () => {
    const metrics = sglangDriver.parseMetrics(
      [
        'sglang:num_running_reqs{model_name="m",tp_rank="0"} 2',
        'sglang:num_queue_reqs{model_name="m",tp_rank="0"} 5',
        'sglang:token_usage{model_name="m",tp_rank="0"} 0.28',
        'sglang:prompt_tokens_total{model_name="m"} 8.128902e+06',
        'sglang:generation_tokens_total{model_name="m"} 7.557572e+06',
      ].join("\n"),
    );
    expect(metrics).toEqual({ requestsRunning: 2, requestsWaiting: 5, kvCacheUsage: 0.28, promptTokensTotal: 8128902, generationTokensTotal: 7557572 });
  });
});
