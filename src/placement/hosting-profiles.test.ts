import { describe, expect, it } from "vitest";
import { hostingProfiles } from "./hosting-profiles.js";
import { cpuProfile, GiB, gpuProfile, held, node } from "./testing/fleet-builder.js";
import type { Snapshot } from "./types.js";

describe("hostingProfiles", () => {
  const snapshot: Snapshot = {
    nodes: [
      node("gpu-1", "2xh100-80@nvl0", { memoryGiB: 64 }),
      node("gpu-2", "2xa100-40@pcie"),
      node("cpu-1", "", { memoryGiB: 16, engines: ["llamacpp"] }),
      node("cpu-2", "", { memoryGiB: 4, engines: ["llamacpp"] }),
      node("gpu-3", "2xh100-80@nvl1", { unschedulable: "cordoned" }),
    ],
    // Busy cards do not take a node out of the pool: the pulled weights serve a later replica.
    replicas: [held("r-1", "other", "gpu-1", [0, 1])],
  };
  const profiles = [gpuProfile(2, { name: "h100", bytesPerCard: 50 * GiB }), cpuProfile(8, 4)];

  it("gives each node the first profile it could run, busy or not, and says why the earlier ones cannot", () => {
    expect(hostingProfiles(snapshot, profiles)).toEqual([
      { node: "gpu-1", profile: "h100", refusals: [] },
      { node: "gpu-2", profile: "cpu", refusals: [{ profile: "h100", reason: "has no h100 cards" }] },
      { node: "cpu-1", profile: "cpu", refusals: [{ profile: "h100", reason: "has no vllm installed" }] },
      {
        node: "cpu-2",
        profile: undefined,
        refusals: [
          { profile: "h100", reason: "has no vllm installed" },
          { profile: "cpu", reason: "has 4.0 GiB free host memory and needs 8.0 GiB" },
        ],
      },
      {
        node: "gpu-3",
        profile: undefined,
        refusals: [
          { profile: "h100", reason: "is cordoned" },
          { profile: "cpu", reason: "is cordoned" },
        ],
      },
    ]);
  });

  it("leaves out a node whose cards are too small for the model by the planner's arithmetic", () => {
    const large = [gpuProfile(1, { name: "big", cardClass: undefined, bytesPerCard: 60 * GiB })];
    expect(hostingProfiles({ nodes: [node("gpu-2", "2xa100-40@pcie")], replicas: [] }, large)[0]).toMatchObject({ profile: undefined, refusals: [{ reason: expect.stringMatching(/usable per card and needs 60/) }] });
  });
});
