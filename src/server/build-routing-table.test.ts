import { describe, expect, it } from "vitest";
import { resolveModel } from "../catalog/catalog-model.js";
import { buildRoutingTable, defaultQueueTimeoutMs } from "./build-routing-table.js";

const profile = { engine: "vllm" as const, source: "/models/qwen", gpus: 1 };

describe("buildRoutingTable", () => {
  it("routes only ready and draining replicas with an endpoint, under their model", () => {
    const models = [resolveModel({ name: "qwen", aliases: ["chat"], profiles: [profile] }, "runtime")];
    const table = buildRoutingTable(models, [
      { id: "r1", model: "qwen", node: "a", state: "ready", endpoint: "http://10.0.0.1:41001/", api_key: "k1" },
      { id: "r2", model: "qwen", node: "b", state: "draining", endpoint: "http://10.0.0.2:41001", api_key: "k2" },
      { id: "r3", model: "qwen", node: "b", state: "starting", endpoint: "http://10.0.0.2:41002", api_key: "k3" },
      { id: "r4", model: "qwen", node: "c", state: "ready", endpoint: null, api_key: "k4" },
      { id: "r5", model: "qwen", node: "c", state: "failed", endpoint: "http://10.0.0.3:41001", api_key: "k5" },
    ]);
    expect(table.models[0]?.replicas).toEqual([
      { id: "r1", node: "a", endpoint: "http://10.0.0.1:41001", state: "ready", api_key: "k1" },
      { id: "r2", node: "b", endpoint: "http://10.0.0.2:41001", state: "draining", api_key: "k2" },
    ]);
    expect(table.aliases).toEqual({ chat: "qwen" });
  });

  it("carries the limits, fallbacks, queue deadline, routing mode and adapters the gateway acts on", () => {
    const models = [
      resolveModel(
        {
          name: "llama",
          context: 8192,
          max_output: 2048,
          fallbacks: ["qwen"],
          scaling: { min: 0, max: 2 },
          queue_timeout: "45s",
          routing: "prefix",
          adapters: [{ name: "legal", source: "/adapters/legal.gguf", scale: 0.5 }],
          profiles: [{ engine: "llamacpp", source: "/models/llama.gguf" }],
        },
        "runtime",
      ),
      resolveModel({ name: "qwen", profiles: [profile] }, "runtime"),
    ];
    const [llama, qwen] = buildRoutingTable(models, []).models;
    expect(llama).toMatchObject({
      context: 8192,
      max_output: 2048,
      fallbacks: ["qwen"],
      on_demand: true,
      queue_timeout_ms: 45_000,
      routing: "prefix",
      engine: "llamacpp",
      tokenizer: "/models/llama.gguf",
      adapters: [{ name: "legal", index: 0, scale: 0.5 }],
    });
    expect(qwen).toMatchObject({ on_demand: false, queue_timeout_ms: defaultQueueTimeoutMs, routing: "least", context: null, tokenizer: "/models/qwen" });
  });

  it("names an external model's key by its variable, never by value", () => {
    const models = [resolveModel({ name: "gpt", external: { base_url: "https://api.example.com/v1", api_key_env: "EXAMPLE_KEY" } }, "runtime")];
    const [gpt] = buildRoutingTable(models, []).models;
    expect(gpt?.external).toEqual({ base_url: "https://api.example.com/v1", api_key_env: "EXAMPLE_KEY", model: null });
    expect(gpt?.engine).toBeNull();
  });
});
