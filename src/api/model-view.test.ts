import { describe, expect, it } from "vitest";
import { buildCatalog } from "../catalog/build-catalog.js";
import type { ModelEntry } from "../catalog/schema.js";
import { modelView } from "./model-view.js";

const catalogModel = (entry: ModelEntry) => {
  const built = buildCatalog([{ entry, source: "runtime", place: `runtime model ${entry.name}` }]).models[0];
  if (!built) throw new Error("the entry did not build");
  return built;
};
const profile = { engine: "vllm", source: "hf://example/tiny@main", gpu_class: "h100" } as const;

describe("a model's replica counts", () => {
  it("counts ready replicas against the count asked for, not against the replicas that exist", () => {
    const view = modelView(catalogModel({ name: "chat", scaling: { min: 3, max: 3 }, profiles: [profile] }), "server.yaml", { ready: 2, desired: 2 });
    expect(view.replicas).toEqual({ ready: 2, desired: 3 });
    expect(view.state).toBe("degraded");
  });

  it("counts a surge or growth above the minimum, and asks nothing of a model kept at 0 or on demand while idle", () => {
    expect(modelView(catalogModel({ name: "chat", scaling: { min: 1, max: 3 }, profiles: [profile] }), "server.yaml", { ready: 1, desired: 2 }).replicas).toEqual({ ready: 1, desired: 2 });
    expect(modelView(catalogModel({ name: "kept", scaling: { min: 0, max: 0 }, profiles: [profile] }), "server.yaml").replicas).toEqual({ ready: 0, desired: 0 });
    expect(modelView(catalogModel({ name: "burst", scaling: { min: 0, max: 1 }, profiles: [profile] }), "server.yaml").replicas).toEqual({ ready: 0, desired: 0 });
  });
});
