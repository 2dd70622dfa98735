import { describe, expect, it } from "vitest";
import { defaultReconcileSettings } from "../catalog/reconcile-settings.js";
import type { ModelClass } from "../catalog/schema.js";
import { previewChanges, type PreviewInput } from "./preview-changes.js";
import type { DesiredModel, Observed, ObservedReplica } from "./types.js";

const GiB = 2 ** 30;
const nowMs = 1_000_000;

function model(name: string, modelClass: ModelClass, min: number, extra: Partial<DesiredModel> = {}): DesiredModel {
  return {
    name,
    modelClass,
    min,
    max: min,
    idleTimeoutMs: 600_000,
    targetInFlight: undefined,
    profiles: [{ name: "vllm", engine: "vllm", cardClass: "h100", gpus: 1, memoryBytes: 0, cpuCores: 0, bytesPerCard: undefined }],
    demandAtMs: undefined,
    backoffUntilMs: undefined,
    restartBeforeMs: undefined,
    restartInPlace: false,
    busyAtMs: undefined,
    placement: { state: "placed", reason: null },
    ...extra,
  };
}

function replica(id: string, modelName: string, card: number): ObservedReplica {
  return { id, model: modelName, profile: "vllm", node: "gpu-1", cards: [card], state: "ready", managed: true, placedAtMs: nowMs - 60_000, withdrawnAtMs: undefined, inFlight: undefined, reason: null, memoryBytes: 0, cpuCores: 0 };
}

const fleet = (replicas: ObservedReplica[]): Observed => ({
  nowMs,
  nodes: [
    {
      name: "gpu-1",
      state: "ready",
      cordoned: false,
      draining: false,
      schedulable: true,
      engines: ["vllm"],
      cards: [0, 1].map((index) => ({ index, cardClass: "h100", memoryBytes: 80 * GiB, fabric: "nvl0" })),
      memoryBytes: 64 * GiB,
      cpuCores: 16,
    },
  ],
  replicas,
});

const input = (before: DesiredModel[], after: DesiredModel[], observed: Observed): PreviewInput => ({
  before: { desired: { models: before }, observed },
  after: { desired: { models: after }, observed },
  settings: defaultReconcileSettings,
  startFacts: (name) => ({ modelClass: [...after, ...before].find((candidate) => candidate.name === name)?.modelClass ?? "standard", memoryBytes: 0, cpuCores: 0, engineArgs: ["vllm", "serve"] }),
});

describe("previewChanges: the reconciler's passes run forward on the would-be state", () => {
  it("credits a scale-up with the start on the free card only, not with what already runs", () => {
    const observed = fleet([replica("a-1", "a", 0)]);
    const changes = previewChanges(input([model("a", "standard", 1)], [model("a", "standard", 2)], observed));
    expect(changes).toEqual([expect.objectContaining({ kind: "replica-start", model: "a", node: "gpu-1", cards: [1], engine_args: ["vllm", "serve"] })]);
  });

  it("stops each replica before its replacement in place, and starts beside it by surge", () => {
    const observed = fleet([replica("a-1", "a", 0)]);
    const surge = previewChanges(input([model("a", "standard", 1)], [model("a", "standard", 1, { restartBeforeMs: nowMs })], observed));
    expect(surge.map((change) => [change.kind, change.cards])).toEqual([
      ["replica-start", [1]],
      ["replica-restart", [0]],
    ]);
    const inPlace = previewChanges(input([model("a", "standard", 1)], [model("a", "standard", 1, { restartBeforeMs: nowMs, restartInPlace: true })], observed));
    expect(inPlace.map((change) => [change.kind, change.cards])).toEqual([
      ["replica-restart", [0]],
      ["replica-start", [0]],
    ]);
  });

  it("shows the opportunistic replica giving way before the critical one takes its card", () => {
    const observed = fleet([replica("o-1", "o", 0), replica("o-2", "o", 1)]);
    const changes = previewChanges(input([model("o", "opportunistic", 2)], [model("o", "opportunistic", 2), model("c", "critical", 1)], observed));
    const preempt = changes.find((change) => change.kind === "replica-preempt");
    const start = changes.find((change) => change.kind === "replica-start" && change.model === "c");
    expect(preempt).toMatchObject({ model: "o", class: "opportunistic" });
    expect(preempt?.summary).toContain("preempted by c (critical)");
    expect(start?.cards).toEqual(preempt?.cards);
    expect(changes.indexOf(preempt as never)).toBeLessThan(changes.indexOf(start as never));
  });

  it("reports a model left without room once, in the planner's words", () => {
    const observed = fleet([replica("a-1", "a", 0), replica("a-2", "a", 1)]);
    const changes = previewChanges(input([model("a", "critical", 2)], [model("a", "critical", 2), model("b", "standard", 1)], observed));
    expect(changes.map((change) => change.kind)).toEqual(["model-unplaceable"]);
    expect(changes[0]?.summary).toMatch(/^b would not be placed: /);
  });
});

describe("previewChanges: a count back within the room", () => {
  it("forecasts no refusal for a model scaled back to what runs, though its last decision was a refusal", () => {
    const observed = fleet([replica("a-1", "a", 0), replica("a-2", "a", 1)]);
    const refused = { placement: { state: "unplaceable", reason: "0 of 1 node: 1 has no free h100" } } as const;
    expect(previewChanges(input([model("a", "standard", 4, refused)], [model("a", "standard", 2, { ...refused, max: 4 })], observed))).toEqual([]);
  });
});

describe("previewChanges: a refusal already on record", () => {
  it("still forecasts it when the change leaves the model short (the diff says a refusal once, not every pass)", () => {
    const observed = fleet([replica("a-1", "a", 0), replica("a-2", "a", 1)]);
    const refused = { placement: { state: "unplaceable", reason: "0 of 1 node: 1 has no free h100" } } as const;
    const after = { desired: { models: [model("a", "standard", 4, refused)] }, observed };
    const whole = previewChanges({ ...input([], [], observed), before: { desired: { models: [] }, observed: { ...observed, replicas: [] } }, after });
    expect(whole).toEqual([expect.objectContaining({ kind: "model-unplaceable", model: "a", summary: "a would not be placed: 0 of 1 node: 1 has no free h100" })]);
    // Against the state before, it is not this change's doing.
    expect(previewChanges({ ...input([], [], observed), before: { desired: { models: [model("a", "standard", 3, refused)] }, observed }, after })).toEqual([]);
  });
});
