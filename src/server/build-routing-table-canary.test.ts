import { describe, expect, it } from "vitest";
import { resolveModel } from "../catalog/catalog-model.js";
import { buildRoutingTable } from "./build-routing-table.js";

const qwen = resolveModel({ name: "qwen", profiles: [{ engine: "vllm", source: "hf://Qwen/Qwen2.5-7B@main", gpus: 1 }] }, "runtime");
const llama = resolveModel({ name: "llama", profiles: [{ engine: "vllm", source: "hf://meta/llama@main", gpus: 1 }] }, "runtime");

describe("buildRoutingTable with canaries", () => {
  it("marks canary replicas and carries the canary's weight on its model only", () => {
    const table = buildRoutingTable(
      [qwen, llama],
      [
        { id: "q1", model: "qwen", node: "a", state: "ready", endpoint: "http://10.0.0.1:41001", api_key: undefined },
        { id: "q2", model: "qwen", node: "b", state: "ready", endpoint: "http://10.0.0.2:41001", api_key: undefined, arm: "canary" },
      ],
      new Map([["qwen", 10]]),
    );
    const [routedQwen, routedLlama] = table.models;
    expect(routedQwen?.canary_weight).toBe(10);
    expect(routedQwen?.replicas.map((replica) => [replica.id, replica.arm])).toEqual([
      ["q1", undefined],
      ["q2", "canary"],
    ]);
    expect(routedLlama && "canary_weight" in routedLlama).toBe(false);
  });
});

describe("buildRoutingTable after a canary ended", () => {
  it("routes nothing to a canary replica once its model has no canary weight", () => {
    const table = buildRoutingTable(
      [qwen],
      [
        { id: "q1", model: "qwen", node: "a", state: "ready", endpoint: "http://10.0.0.1:41001", api_key: undefined, arm: "stable" },
        { id: "q2", model: "qwen", node: "b", state: "ready", endpoint: "http://10.0.0.2:41001", api_key: undefined, arm: "canary" },
      ],
      new Map(),
    );
    expect(table.models[0]?.replicas.map((replica) => replica.id)).toEqual(["q1"]);
  });
});
