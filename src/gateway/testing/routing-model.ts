import type { RoutingModel } from "../../protocol/routing-table.js";

/** A routing-table model for tests: a plain vLLM model with no replicas, limits or fallbacks, changed by `extra`. */
export function routingModel(name: string, extra: Partial<RoutingModel> = {}): RoutingModel {
  return {
    name,
    context: null,
    max_output: null,
    fallbacks: [],
    on_demand: false,
    queue_timeout_ms: 30_000,
    routing: "least",
    engine: "vllm",
    external: null,
    tokenizer: null,
    adapters: [],
    replicas: [],
    ...extra,
  };
}
