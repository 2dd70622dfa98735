import { describe, expect, it } from "vitest";
import { defaultReconcileSettings } from "../catalog/reconcile-settings.js";
import { diff } from "./diff.js";
import type { Action, DesiredModel, ObservedNode, ObservedReplica } from "./types.js";

const GiB = 1024 ** 3;
const now = 1_000_000_000;
const settings = { ...defaultReconcileSettings, withdrawDelayMs: 1000, resumeAfterMs: 5000 };

const nodes: ObservedNode[] = ["gpu-1", "gpu-2"].map((name) => ({
  name,
  state: "ready",
  cordoned: false,
  draining: false,
  schedulable: true,
  engines: ["vllm"],
  cards: [0, 1].map((index) => ({ index, gpuClass: "h100", memoryBytes: 80 * GiB, fabric: "nvl0" })),
  memoryBytes: 256 * GiB,
  cpuCores: 32,
}));

function desired(overrides: Partial<DesiredModel> = {}): DesiredModel {
  return {
    name: "qwen",
    modelClass: "standard",
    min: 2,
    max: 2,
    idleTimeoutMs: 600_000,
    targetInFlight: undefined,
    profiles: [{ name: "h100", engine: "vllm", gpuClass: "h100", gpus: 1, memoryBytes: 0, cpuCores: 0, bytesPerCard: undefined }],
    demandAtMs: undefined,
    backoffUntilMs: undefined,
    restartBeforeMs: undefined,
    restartInPlace: false,
    busyAtMs: undefined,
    placement: { state: "placed", reason: null },
    ...overrides,
  };
}

function running(id: string, node: string, card: number, overrides: Partial<ObservedReplica> = {}): ObservedReplica {
  return {
    id,
    model: "qwen",
    profile: "h100",
    node,
    cards: [card],
    state: "ready",
    managed: true,
    placedAtMs: now - 60_000,
    withdrawnAtMs: undefined,
    inFlight: undefined,
    reason: null,
    memoryBytes: 0,
    cpuCores: 0,
    ...overrides,
  };
}

const stable = [running("qwen-a", "gpu-1", 0), running("qwen-b", "gpu-2", 0)];
const canaryArm = desired({ min: 1, max: 1, canary: { revision: "v2" }, placement: undefined });
const starts = (actions: Action[]) => actions.filter((action): action is Extract<Action, { kind: "start" }> => action.kind === "start");

describe("diff with a canary", () => {
  it("starts the canary's replicas at its revision beside the stable ones, whose count is not reduced", () => {
    const actions = diff({ models: [desired(), canaryArm] }, { nowMs: now, nodes, replicas: stable }, settings);
    expect(starts(actions)).toEqual([expect.objectContaining({ model: "qwen", canary: { revision: "v2" }, reason: "canary at v2" })]);
    expect(actions.filter((action) => action.kind === "withdraw")).toEqual([]);
  });

  it("counts a canary replica toward its arm only: nothing more starts, and no stable replica is given up", () => {
    const replicas = [...stable, running("qwen-c", "gpu-1", 1, { arm: "canary" })];
    expect(diff({ models: [desired(), canaryArm] }, { nowMs: now, nodes, replicas }, settings)).toEqual([]);
  });

  it("withdraws the canary's replicas once no canary is wanted (aborted), and leaves stable alone", () => {
    const replicas = [...stable, running("qwen-c", "gpu-1", 1, { arm: "canary" })];
    const actions = diff({ models: [desired()] }, { nowMs: now, nodes, replicas }, settings);
    expect(actions).toEqual([{ kind: "withdraw", id: "qwen-c", model: "qwen", node: "gpu-1", reason: "the canary of qwen has ended" }]);
  });

  it("after a promotion, rolls the old stable replicas only as replicas at the new revision serve", () => {
    // The canary replica became stable, placed at the promotion; the two older ones are outdated.
    const replicas = [...stable, running("qwen-c", "gpu-1", 1, { placedAtMs: now - 1000 })];
    const actions = diff({ models: [desired({ restartBeforeMs: now - 1000 })] }, { nowMs: now, nodes, replicas }, settings);
    // One ready at the new revision of the two wanted: one new starts, one old goes (2 old + 1 new ready, 2 wanted).
    expect(starts(actions)).toHaveLength(1);
    expect(starts(actions)[0]?.canary).toBeUndefined();
    expect(actions.filter((action) => action.kind === "withdraw")).toHaveLength(1);
  });
});
