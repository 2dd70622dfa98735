import { resolveModel } from "../../src/catalog/catalog-model.js";
import { modelEntrySchema } from "../../src/catalog/schema.js";
import type { NodeView } from "../../src/protocol/views.js";
import type { StoredReplica } from "../../src/store/fleet-rows.js";
import type { ReplicaIntentRow } from "../../src/store/reconcile-rows.js";

/** What the store and the fleet registry hold, as plain values: for the tests of the reconciler's pure observation and checks. */
export const GiB = 1024 ** 3;
export const at = "2026-03-01T10:00:00.000Z";

/** A model with a vLLM profile on one H100 and a llama.cpp CPU profile of 6 cores. */
export const chat = resolveModel(modelEntrySchema.parse({ name: "chat", profiles: [{ name: "gpu", engine: "vllm", source: "/models/chat", gpu_class: "h100" }, { name: "cpu", engine: "llamacpp", source: "/models/chat.gguf", cpu_cores: 6 }] }), "runtime");

/** A node view as the fleet registry answers it: one 80 GiB H100, ready. */
export function node(name: string, overrides: Partial<NodeView> = {}): NodeView {
  return {
    name,
    state: "ready",
    address: "http://127.0.0.1:1",
    hostname: name,
    fabric: "nvl0",
    labels: {},
    gpus: [{ index: 0, uuid: "GPU-0", name: "H100", class: "h100", memory_bytes: 80 * GiB, memory_used_bytes: null, memory_foreign_bytes: 2 * GiB, fabric: "nvl0", replica: null }],
    memory_bytes: 256 * GiB,
    cpu_cores: 32,
    engines: ["vllm", "llamacpp"],
    disk_free_bytes: 0,
    simulated: false,
    joined_at: at,
    last_seen_at: at,
    replicas: [],
    cordoned: false,
    draining: false,
    ...overrides,
  };
}

/** A replica row of `chat` as the store holds it, ready and carrying 5 requests. */
export function row(id: string, nodeName: string, profile: string, overrides: Partial<StoredReplica> = {}): StoredReplica {
  return {
    id,
    node: nodeName,
    model: "chat",
    profile,
    engine: profile === "cpu" ? "llamacpp" : "vllm",
    cards: profile === "cpu" ? [] : [0],
    spec: null,
    state: "ready",
    pending: false,
    status: { id, model: "chat", profile, engine: profile === "cpu" ? "llamacpp" : "vllm", cards: profile === "cpu" ? [] : [0], state: "ready", since: at, load: { running: 3, waiting: 2 } },
    stop_requested: false,
    created_at: at,
    updated_at: at,
    ...overrides,
  };
}

/** The reconciler's intent for a replica: managed, placed at 09:00. */
export function intent(id: string, overrides: Partial<ReplicaIntentRow> = {}): ReplicaIntentRow {
  return { id, model: "chat", managed: 1, placed_at: "2026-03-01T09:00:00.000Z", withdrawn_at: null, withdraw_reason: null, arm: null, ...overrides };
}

