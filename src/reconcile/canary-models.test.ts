import { describe, expect, it } from "vitest";
import { resolveModel } from "../catalog/catalog-model.js";
import type { CanaryRow } from "../store/canary-rows.js";
import { canaryModels } from "./canary-models.js";

const qwen = resolveModel(
  {
    name: "qwen",
    origin: "hf://Qwen/Qwen2.5-7B@main",
    profiles: [
      { name: "h100", engine: "vllm", source: "hf://Qwen/Qwen2.5-7B@main", gpus: 1 },
      { name: "cpu", engine: "llamacpp", source: "/models/qwen.gguf" },
    ],
  },
  "runtime",
);
const local = resolveModel({ name: "local", profiles: [{ engine: "vllm", source: "/models/local", gpus: 1 }] }, "runtime");

function canary(model: string, state = "running"): CanaryRow {
  return {
    model,
    revision: "v2",
    from_revision: "main",
    weight: 10,
    replicas: 2,
    max_error_rate: null,
    max_p95_ms: null,
    min_requests: null,
    window_ms: null,
    state,
    decision: null,
    started_at: "2026-01-01T00:00:00.000Z",
    ended_at: null,
    actor: "admin",
    actor_user: null,
    ended_by: null,
  };
}

describe("canaryModels", () => {
  it("runs the model at the canary's revision: the hub profiles move, the others stay", () => {
    const [trial] = canaryModels([qwen], [canary("qwen")], () => undefined);
    expect(trial?.replicas).toBe(2);
    expect(trial?.model.profiles.map((profile) => profile.source)).toEqual(["hf://Qwen/Qwen2.5-7B@v2", "/models/qwen.gguf"]);
  });

  it("keeps a canary whose promotion or abort is asked for until it is carried out, and drops ended ones", () => {
    expect(canaryModels([qwen], [canary("qwen", "promoting")], () => undefined)).toHaveLength(1);
    expect(canaryModels([qwen], [canary("qwen", "aborted")], () => undefined)).toEqual([]);
  });

  it("leaves out, and reports, a canary whose model is gone or has no revision to move to", () => {
    const unusable: string[] = [];
    expect(canaryModels([local], [canary("local"), canary("gone")], (model) => unusable.push(model))).toEqual([]);
    expect(unusable).toEqual(["local", "gone"]);
  });
});
