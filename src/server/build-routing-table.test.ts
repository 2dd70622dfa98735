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

  it("marks the replicas whose engine serves Anthropic's /v1/messages itself: vLLM and llama-server, not the built-in llama.cpp or SGLang", () => {
    const models = [resolveModel({ name: "qwen", profiles: [profile] }, "runtime")];
    const replica = (id: string, engine: string, llamaCpp?: { kind: "llama-server" | "built-in" } | null) => ({ id, model: "qwen", node: "a", state: "ready", endpoint: `http://10.0.0.1:4100${id}`, api_key: undefined, engine, llama_cpp: llamaCpp });
    const table = buildRoutingTable(models, [
      replica("1", "vllm", null),
      replica("2", "llamacpp", { kind: "llama-server" }),
      replica("3", "llamacpp", { kind: "built-in" }),
      // A simulated llama.cpp node reports no llama.cpp: it stands in for the built-in engine too.
      replica("4", "llamacpp", null),
      replica("5", "sglang", null),
      replica("6", "trtllm", null),
    ]);
    expect(table.models[0]?.replicas.map((routed) => [routed.id, routed.serves_messages ?? false])).toEqual([
      ["1", true],
      ["2", true],
      ["3", false],
      ["4", false],
      ["5", false],
      ["6", false],
    ]);
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

  it("marks a model whose first profile's engine pools (a reranker, an embedding model) with the flag and the routes it serves", () => {
    const models = [
      resolveModel({ name: "reranker", profiles: [{ ...profile, args: ["--runner", "pooling", "--hf-overrides", "{}"] }] }, "runtime"),
      resolveModel({ name: "embed", profiles: [{ engine: "llamacpp", source: "/models/e.gguf", args: ["--embedding"] }, { ...profile, args: ["--runner", "pooling"] }] }, "runtime"),
      resolveModel({ name: "qwen", profiles: [profile] }, "runtime"),
    ];
    const [reranker, embed, qwen] = buildRoutingTable(models, []).models;
    expect(reranker?.pooling).toEqual({ flag: "--runner pooling", routes: ["embeddings", "rerank", "score"] });
    expect(embed?.pooling).toEqual({ flag: "--embedding", routes: ["embeddings"] });
    expect(qwen?.pooling).toBeUndefined();
  });

  it("names an external model's key by its variable, never by value", () => {
    const models = [resolveModel({ name: "gpt", external: { base_url: "https://api.example.com/v1", api_key_env: "EXAMPLE_KEY" } }, "runtime")];
    const [gpt] = buildRoutingTable(models, []).models;
    expect(gpt?.external).toEqual({ base_url: "https://api.example.com/v1", api_key_env: "EXAMPLE_KEY", model: null });
    expect(gpt?.engine).toBeNull();
  });
});

describe("the placement state in the routing table", () => {
  const onDemand = (name: string, scaling = { min: 0, max: 1 }) => resolveModel({ name, scaling, profiles: [profile] }, "runtime");

  it("says why no replica will come when placement refused the model, or it is kept at 0/0", () => {
    const placements = new Map([["huge", { state: "unplaceable" as const, reason: "no node has 4 free h100 cards" }]]);
    const table = buildRoutingTable([onDemand("huge"), onDemand("parked", { min: 0, max: 0 }), onDemand("fine")], [], new Map(), placements);
    expect(table.models.find((model) => model.name === "huge")?.unavailable).toBe("placement cannot place huge: no node has 4 free h100 cards");
    expect(table.models.find((model) => model.name === "parked")?.unavailable).toMatch(/^parked is kept unplaced on purpose \(scaling min 0, max 0\)/);
    expect(table.models.find((model) => model.name === "fine")?.unavailable ?? null).toBeNull();
  });

  it("estimates how long a loading replica still needs from its progress, and says nothing when none loads", () => {
    const now = Date.parse("2026-01-01T00:01:00Z");
    const fetching = { id: "r1", model: "fine", node: "a", state: "fetching", endpoint: null, api_key: undefined, since: "2026-01-01T00:00:00Z", progress: { fraction: 0.25 } };
    const table = buildRoutingTable([onDemand("fine"), onDemand("idle")], [fetching], new Map(), new Map(), now);
    // A quarter in 60 s: three quarters more take 180 s, and the engine then loads.
    const eta = table.models.find((model) => model.name === "fine")?.loading_eta_s ?? 0;
    expect(eta).toBeGreaterThanOrEqual(180);
    expect(eta).toBeLessThan(240);
    expect(table.models.find((model) => model.name === "idle")?.loading_eta_s ?? null).toBeNull();
  });
});
