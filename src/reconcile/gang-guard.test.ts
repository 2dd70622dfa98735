import { describe, expect, it } from "vitest";
import { diff } from "./diff.js";
import { gangNotStartedReason } from "./gang-guard.js";
import { model, node, observed, replica, settings } from "../../test/support/reconcile-fixtures.js";

const gangProfile = { name: "gang", engine: "vllm" as const, cardClass: "h100", gpus: 2, nodes: 2, memoryBytes: 0, cpuCores: 0, bytesPerCard: undefined };

describe("a replica over several nodes, before this release starts them", () => {
  it("is never started on its leader alone: the model is refused in words that say why", () => {
    const actions = diff({ models: [model("dsv3", { profiles: [gangProfile] })] }, observed([node("gpu-1"), node("gpu-2")]), settings);
    expect(actions.filter((action) => action.kind === "start")).toEqual([]);
    expect(actions).toContainEqual({ kind: "placement", model: "dsv3", state: "unplaceable", reason: gangNotStartedReason });
  });

  it("stops nothing to make room for a gang", () => {
    const running = [replica("small", "other", "gpu-1", [0, 1])];
    const actions = diff(
      { models: [model("dsv3", { modelClass: "critical", profiles: [gangProfile] }), model("other", { modelClass: "opportunistic" })] },
      observed([node("gpu-1"), node("gpu-2")], running),
      settings,
    );
    expect(actions.filter((action) => action.kind === "withdraw")).toEqual([]);
  });
});
