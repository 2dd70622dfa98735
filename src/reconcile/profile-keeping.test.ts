import { describe, expect, it } from "vitest";
import { diff } from "./diff.js";
import { model, node, now, observed, replica, settings } from "../../test/support/reconcile-fixtures.js";
import type { Action, DesiredModel } from "./types.js";

const starts = (actions: Action[]) => actions.filter((action): action is Extract<Action, { kind: "start" }> => action.kind === "start");
const withdrawals = (actions: Action[]) => actions.filter((action): action is Extract<Action, { kind: "withdraw" }> => action.kind === "withdraw");

/** The demo's shape: vLLM on two H100s first, llama.cpp on the host's CPU as the fallback. */
const cardsThenCpu: DesiredModel["profiles"] = [
  { name: "h100x2", engine: "vllm", cardClass: "h100", gpus: 2, memoryBytes: 0, cpuCores: 0, bytesPerCard: undefined },
  { name: "cpu", engine: "llamacpp", cardClass: undefined, gpus: 0, memoryBytes: 0, cpuCores: 4, bytesPerCard: undefined },
];
const placed = { state: "placed", reason: null } as const;

describe("a change keeps each replica on its profile", () => {
  it("waits for room on the replica's own profile rather than restarting it on a worse one", () => {
    const restarting = model("qwen", { profiles: cardsThenCpu, restartBeforeMs: now - 1000, placement: placed });
    const old = replica("qwen-old", "qwen", "gpu-1", [0, 1], { profile: "h100x2" });
    const actions = diff({ models: [restarting] }, observed([node("gpu-1")], [old]), settings);
    expect(starts(actions)).toEqual([]);
    expect(withdrawals(actions)).toEqual([]);
    // Not unplaceable: it serves on its old replica, and says what it waits for.
    expect(actions.find((action) => action.kind === "placement")).toMatchObject({ state: "waiting", reason: expect.stringMatching(/^restarting qwen waits for room on its profile h100x2: /) });
  });

  it("restarts a replica on the CPU profile where it ran, and may start it on a better one", () => {
    const restarting = model("qwen", { profiles: cardsThenCpu, restartBeforeMs: now - 1000, placement: placed });
    const old = replica("qwen-old", "qwen", "gpu-1", [], { profile: "cpu", cpuCores: 4 });
    expect(starts(diff({ models: [restarting] }, observed([node("gpu-1")], [old]), settings))).toEqual([expect.objectContaining({ profile: "h100x2" })]);
  });

  it("replaces the best-placed old replica first, so the next replacement is not held to a better profile than its own", () => {
    const restarting = model("qwen", { profiles: cardsThenCpu, min: 2, max: 2, restartBeforeMs: now - 1000, placement: placed });
    const onCards = replica("old-cards", "qwen", "gpu-1", [0, 1], { profile: "h100x2" });
    const onCpu = replica("old-cpu", "qwen", "gpu-2", [], { profile: "cpu", placedAtMs: now - 30_000 });
    const fresh = replica("new-cards", "qwen", "gpu-2", [0, 1], { profile: "h100x2", placedAtMs: now - 500 });
    const actions = diff({ models: [restarting] }, observed([node("gpu-1"), node("gpu-2")], [onCards, onCpu, fresh]), settings);
    expect(withdrawals(actions).map((action) => action.id)).toEqual(["old-cards"]);
  });
});

describe("the reconciler moves replicas back to the preferred profile", () => {
  const onCpu = replica("qwen-cpu", "qwen", "gpu-1", [], { profile: "cpu", cpuCores: 4 });

  it("starts a replica on the preferred profile beside one on a worse profile once cards are free", () => {
    const actions = diff({ models: [model("qwen", { profiles: cardsThenCpu, placement: placed })] }, observed([node("gpu-1")], [onCpu]), settings);
    expect(starts(actions)).toEqual([expect.objectContaining({ model: "qwen", profile: "h100x2", promotes: { id: "qwen-cpu", profile: "cpu" } })]);
    expect(withdrawals(actions)).toEqual([]);
  });

  it("moves nothing while the model's files are being read: the better profile is not yet priced (a server just started)", () => {
    const reading = diff({ models: [model("qwen", { profiles: cardsThenCpu, placement: placed, factsPending: true })] }, observed([node("gpu-1")], [onCpu]), settings);
    expect(starts(reading)).toEqual([]);
  });

  it("moves nothing while no better profile has room", () => {
    const full = [onCpu, replica("other-a", "other", "gpu-1", [0])];
    expect(diff({ models: [model("qwen", { profiles: cardsThenCpu, placement: placed }), model("other", { placement: placed })] }, observed([node("gpu-1")], full), settings)).toEqual([]);
  });

  it("keeps the worse replica serving until the better one is ready, then withdraws it as promoted", () => {
    const qwen = model("qwen", { profiles: cardsThenCpu, placement: placed });
    const starting = replica("qwen-cards", "qwen", "gpu-1", [0, 1], { profile: "h100x2", state: "starting", placedAtMs: now - 500 });
    expect(diff({ models: [qwen] }, observed([node("gpu-1")], [onCpu, starting]), settings)).toEqual([]);
    const ready = { ...starting, state: "ready" as const };
    expect(diff({ models: [qwen] }, observed([node("gpu-1")], [onCpu, ready]), settings)).toEqual([
      { kind: "withdraw", id: "qwen-cpu", model: "qwen", node: "gpu-1", reason: "qwen moved back to its preferred profile h100x2: replica qwen-cards serves there now", promotedTo: "h100x2" },
    ]);
  });

  it("gives up the replica on the worse profile first when scaling down", () => {
    const qwen = model("qwen", { profiles: cardsThenCpu, placement: placed });
    const onCards = replica("qwen-cards", "qwen", "gpu-1", [0, 1], { profile: "h100x2", placedAtMs: now - 30_000 });
    expect(withdrawals(diff({ models: [qwen] }, observed([node("gpu-1")], [onCards, onCpu]), settings)).map((action) => action.id)).toEqual(["qwen-cpu"]);
  });

  it("promotes nothing during a restart, a backoff or for a replica started by hand", () => {
    const byHand = { ...onCpu, managed: false };
    expect(starts(diff({ models: [model("qwen", { profiles: cardsThenCpu, placement: placed })] }, observed([node("gpu-1")], [byHand]), settings))).toEqual([]);
    const backingOff = model("qwen", { profiles: cardsThenCpu, placement: placed, backoffUntilMs: now + 10_000 });
    expect(starts(diff({ models: [backingOff] }, observed([node("gpu-1")], [onCpu]), settings))).toEqual([]);
  });

  it("does not try the move again every pass after its replica failed while the worse one served", () => {
    const failedLately = model("qwen", { profiles: cardsThenCpu, placement: placed, lastFailureAtMs: now - 1000 });
    expect(starts(diff({ models: [failedLately] }, observed([node("gpu-1")], [onCpu]), settings))).toEqual([]);
    const longAgo = { ...failedLately, lastFailureAtMs: now - settings.backoffMaxMs - 1 };
    expect(starts(diff({ models: [longAgo] }, observed([node("gpu-1")], [onCpu]), settings))).toEqual([expect.objectContaining({ profile: "h100x2" })]);
  });
});

describe("an in-place restart keeps the profile too", () => {
  it("starts the replacement on the replica's profile while the withdrawn one still stops, not on a worse one", () => {
    const restarting = model("qwen", { profiles: cardsThenCpu, restartBeforeMs: now - 1000, restartInPlace: true, placement: placed });
    const stopping = replica("qwen-old", "qwen", "gpu-1", [0, 1], { profile: "h100x2", state: "draining", withdrawnAtMs: now - 500 });
    const actions = diff({ models: [restarting] }, observed([node("gpu-1")], [stopping]), settings);
    expect(starts(actions)).toEqual([]);
    expect(actions.find((action) => action.kind === "placement")).toMatchObject({ state: "waiting" });
  });
});
