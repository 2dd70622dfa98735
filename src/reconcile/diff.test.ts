import { describe, expect, it } from "vitest";
import { backoffMs } from "./backoff.js";
import { desiredCount } from "./desired-count.js";
import { diff } from "./diff.js";
import { failureMessage } from "./failure-message.js";
import { GiB, model, node, now, observed, replica, settings } from "../../test/support/reconcile-fixtures.js";
import type { Action, DesiredModel, ObservedReplica } from "./types.js";

const kinds = (actions: Action[]) => actions.map((action) => action.kind);
const starts = (actions: Action[]) => actions.filter((action): action is Extract<Action, { kind: "start" }> => action.kind === "start");

describe("diff", () => {
  it("places the minimum of a new model on free cards, and nothing once it runs", () => {
    const first = diff({ models: [model("qwen", { min: 2, max: 2 })] }, observed([node("gpu-1"), node("gpu-2")]), settings);
    expect(starts(first).map((start) => start.model)).toEqual(["qwen", "qwen"]);
    // Spread: two replicas of one model go to two nodes.
    expect(new Set(starts(first).map((start) => start.node)).size).toBe(2);
    const running = [replica("qwen-a", "qwen", "gpu-1", [0]), replica("qwen-b", "qwen", "gpu-2", [0])];
    const again = diff({ models: [model("qwen", { min: 2, max: 2, placement: { state: "placed", reason: null } })] }, observed([node("gpu-1"), node("gpu-2")], running), settings);
    expect(again).toEqual([]);
  });

  it("places nothing while the model's files are being read, and places it once their figures price the cards", () => {
    const reading = diff({ models: [model("qwen", { min: 1, max: 1, factsPending: true })] }, observed([node("gpu-1")]), settings);
    expect(starts(reading)).toEqual([]);
    const read = diff({ models: [model("qwen", { min: 1, max: 1, factsPending: false })] }, observed([node("gpu-1")]), settings);
    expect(starts(read).map((start) => start.model)).toEqual(["qwen"]);
  });

  it("counts a replica still starting, so a second pass does not start it twice", () => {
    const starting = [replica("qwen-a", "qwen", "gpu-1", [0], { state: "pending", placedAtMs: now - 100 })];
    expect(starts(diff({ models: [model("qwen")] }, observed([node("gpu-1")], starting), settings))).toEqual([]);
  });

  it("sends a recorded start again when its agent never confirmed it", () => {
    const stale = [replica("qwen-a", "qwen", "gpu-1", [0], { state: "pending", placedAtMs: now - 6000 })];
    expect(diff({ models: [model("qwen")] }, observed([node("gpu-1")], stale), settings)).toContainEqual({ kind: "resume", id: "qwen-a", model: "qwen", node: "gpu-1" });
  });

  it("reports a model too large for any node as unplaceable, with the reason per node", () => {
    const big = model("big", { profiles: [{ name: "h100x4", engine: "vllm", cardClass: "h100", gpus: 4, memoryBytes: 0, cpuCores: 0, bytesPerCard: undefined }] });
    const actions = diff({ models: [big] }, observed([node("gpu-1"), node("gpu-2")]), settings);
    const placement = actions.find((action) => action.kind === "placement");
    expect(placement).toMatchObject({ state: "unplaceable" });
    expect(placement && "reason" in placement ? placement.reason : "").toBe("0 of 2 nodes: 2 have 2 h100 and need 4");
    // Said once: the same refusal on the next pass is not repeated.
    const again = diff({ models: [{ ...big, placement: { state: "unplaceable", reason: (placement as { reason: string }).reason } }] }, observed([node("gpu-1"), node("gpu-2")]), settings);
    expect(kinds(again)).not.toContain("placement");
  });

  it("places nothing on a cordoned, draining or lost node", () => {
    const nodes = [node("a", { cordoned: true }), node("b", { draining: true }), node("c", { state: "lost" })];
    const actions = diff({ models: [model("qwen")] }, observed(nodes), settings);
    expect(starts(actions)).toEqual([]);
    expect(actions.find((action) => action.kind === "placement")).toMatchObject({ state: "unplaceable", reason: expect.stringMatching(/cordoned/) });
  });

  it("records a failed managed replica for its backoff and leaves one started by hand alone", () => {
    const replicas = [replica("qwen-a", "qwen", "gpu-1", [0], { state: "failed", reason: "engine exited with code 1" }), replica("hand-1", "qwen", "gpu-1", [1], { state: "failed", managed: false })];
    const actions = diff({ models: [model("qwen", { backoffUntilMs: now + 10_000 })] }, observed([node("gpu-1")], replicas), settings);
    expect(actions.filter((action) => action.kind === "record-failure")).toEqual([{ kind: "record-failure", id: "qwen-a", model: "qwen", node: "gpu-1", reason: "engine exited with code 1", anotherServes: false }]);
    // In backoff: nothing new starts yet.
    expect(starts(actions)).toEqual([]);
  });

  it("says a failed replica's model still serves when another of its replicas is ready, so its event names no wait", () => {
    const replicas = [replica("qwen-a", "qwen", "gpu-1", [0], { state: "failed", reason: "killed by SIGKILL" }), replica("qwen-b", "qwen", "gpu-1", [1])];
    const failure = diff({ models: [model("qwen", { min: 2 })] }, observed([node("gpu-1")], replicas), settings).find((action) => action.kind === "record-failure");
    expect(failure).toMatchObject({ id: "qwen-a", anotherServes: true });
    expect(failureMessage(failure as Extract<typeof failure, { kind: "record-failure" }>, 1, 0)).toBe("replica qwen-a of qwen on gpu-1 failed (replaced at once: another replica of qwen serves): killed by SIGKILL");
    const alone = { kind: "record-failure", id: "qwen-a", model: "qwen", node: "gpu-1", reason: "exited", anotherServes: false } as const;
    expect(failureMessage(alone, 3, 4000)).toBe("replica qwen-a of qwen on gpu-1 failed (3 in a row; next start in 4 s): exited");
    expect(failureMessage(alone, 1, 400)).toContain("next start in 0.4 s");
  });

  it("replaces the replicas of a lost node elsewhere", () => {
    const replicas = [replica("qwen-a", "qwen", "gpu-1", [0], { state: "lost" })];
    const actions = diff({ models: [model("qwen")] }, observed([node("gpu-1", { state: "lost" }), node("gpu-2")], replicas), settings);
    expect(actions).toContainEqual(expect.objectContaining({ kind: "abandon", id: "qwen-a" }));
    expect(starts(actions)).toEqual([expect.objectContaining({ model: "qwen", node: "gpu-2" })]);
  });

  it("withdraws a removed model's replicas from routing, then stops them after the withdraw delay", () => {
    const replicas = [replica("old-a", "old", "gpu-1", [0], { managed: false })];
    expect(diff({ models: [] }, observed([node("gpu-1")], replicas), settings)).toEqual([
      { kind: "withdraw", id: "old-a", model: "old", node: "gpu-1", reason: "model old was removed from the catalog" },
    ]);
    const withdrawn = [{ ...replicas[0] as ObservedReplica, withdrawnAtMs: now - 500 }];
    expect(diff({ models: [] }, observed([node("gpu-1")], withdrawn), settings)).toEqual([]);
    const later = [{ ...replicas[0] as ObservedReplica, withdrawnAtMs: now - 1500 }];
    expect(diff({ models: [] }, observed([node("gpu-1")], later), settings)).toEqual([{ kind: "stop", id: "old-a", model: "old", node: "gpu-1" }]);
  });

  it("restarts by surge: the new replica starts beside the old, and the old goes only once the new one is ready", () => {
    const restarting = model("qwen", { restartBeforeMs: now - 1000, placement: { state: "placed", reason: null } });
    const old = replica("qwen-old", "qwen", "gpu-1", [0], { placedAtMs: now - 60_000 });
    const first = diff({ models: [restarting] }, observed([node("gpu-1")], [old]), settings);
    expect(starts(first)).toEqual([expect.objectContaining({ model: "qwen", node: "gpu-1", cards: [1] })]);
    expect(kinds(first)).not.toContain("withdraw");
    const fresh = replica("qwen-new", "qwen", "gpu-1", [1], { placedAtMs: now - 500, state: "starting" });
    expect(kinds(diff({ models: [restarting] }, observed([node("gpu-1")], [old, fresh]), settings))).toEqual([]);
    const ready = { ...fresh, state: "ready" as const };
    expect(diff({ models: [restarting] }, observed([node("gpu-1")], [old, ready]), settings)).toEqual([
      { kind: "withdraw", id: "qwen-old", model: "qwen", node: "gpu-1", reason: "restarting qwen; its replacement is ready" },
    ]);
    const done = diff({ models: [restarting] }, observed([node("gpu-1")], [ready]), settings);
    expect(done).toEqual([{ kind: "restart-finished", model: "qwen" }]);
  });

  it("restarts in place: the old one stops first when asked to", () => {
    const restarting = model("qwen", { restartBeforeMs: now - 1000, restartInPlace: true, placement: { state: "placed", reason: null } });
    const old = replica("qwen-old", "qwen", "gpu-1", [0, 1], { placedAtMs: now - 60_000 });
    const actions = diff({ models: [restarting] }, observed([node("gpu-1")], [old]), settings);
    expect(actions).toEqual([{ kind: "withdraw", id: "qwen-old", model: "qwen", node: "gpu-1", reason: "restarting qwen in place" }]);
  });

  it("preempts an opportunistic replica for a critical model that has no room", () => {
    const small = node("gpu-1", { cards: [{ index: 0, cardClass: "h100", memoryBytes: 80 * GiB, fabric: "nvl0" }] });
    const models = [model("batch", { modelClass: "opportunistic", min: 0, max: 1, demandAtMs: now }), model("prod", { modelClass: "critical" })];
    const actions = diff({ models }, observed([small], [replica("batch-a", "batch", "gpu-1", [0])]), settings);
    expect(actions).toContainEqual({ kind: "withdraw", id: "batch-a", model: "batch", node: "gpu-1", reason: "preempted by prod (critical)", preemptedFor: "prod" });
    expect(actions.find((action) => action.kind === "placement" && action.model === "prod")).toMatchObject({ state: "waiting" });
  });

  it("keeps a second model waiting on the replicas the first one preempted, rather than calling it unplaceable", () => {
    const small = node("gpu-1", { cards: [{ index: 0, cardClass: "h100", memoryBytes: 80 * GiB, fabric: "nvl0" }] });
    const models = [model("batch", { modelClass: "opportunistic", min: 0, max: 1, demandAtMs: now }), model("prod", { modelClass: "critical" }), model("prod2", { modelClass: "critical" })];
    const actions = diff({ models }, observed([small], [replica("batch-a", "batch", "gpu-1", [0])]), settings);
    expect(actions.filter((action) => action.kind === "withdraw")).toEqual([expect.objectContaining({ id: "batch-a", preemptedFor: "prod" })]);
    expect(actions.find((action) => action.kind === "placement" && action.model === "prod2")).toEqual({ kind: "placement", model: "prod2", state: "waiting", reason: "waiting for preempted replicas to stop" });
  });

  it("gives up an opportunistic replica before a standard one", () => {
    const nodes = [node("gpu-1"), node("gpu-2")];
    const models = [model("tiny"), model("batch", { modelClass: "opportunistic", min: 0, max: 1, demandAtMs: now }), model("prod", { modelClass: "critical", profiles: [{ name: "h100x2", engine: "vllm", cardClass: "h100", gpus: 2, memoryBytes: 0, cpuCores: 0, bytesPerCard: undefined }] })];
    const replicas = [replica("tiny-a", "tiny", "gpu-1", [0]), replica("batch-a", "batch", "gpu-2", [0, 1])];
    const withdrawals = diff({ models }, observed(nodes, replicas), settings).filter((action) => action.kind === "withdraw");
    expect(withdrawals).toEqual([expect.objectContaining({ id: "batch-a", preemptedFor: "prod" })]);
  });

  it("drains a node by surge where there is room, and empties it anyway where there is none", () => {
    const running = [replica("qwen-a", "qwen", "gpu-1", [0])];
    const roomy = diff({ models: [model("qwen", { placement: { state: "placed", reason: null } })] }, observed([node("gpu-1", { draining: true }), node("gpu-2")], running), settings);
    expect(starts(roomy)).toEqual([expect.objectContaining({ node: "gpu-2" })]);
    expect(kinds(roomy)).not.toContain("withdraw");
    const full = diff({ models: [model("qwen", { placement: { state: "placed", reason: null } })] }, observed([node("gpu-1", { draining: true })], running), settings);
    expect(full.filter((action) => action.kind === "withdraw")).toEqual([expect.objectContaining({ id: "qwen-a", reason: expect.stringMatching(/^node gpu-1 is draining, and no other node has room for qwen/) })]);
  });

  it("never preempts for an opportunistic model", () => {
    const small = node("gpu-1", { cards: [{ index: 0, cardClass: "h100", memoryBytes: 80 * GiB, fabric: "nvl0" }] });
    const models = [model("prod", { modelClass: "standard" }), model("batch", { modelClass: "opportunistic", min: 0, max: 1, demandAtMs: now })];
    const actions = diff({ models }, observed([small], [replica("prod-a", "prod", "gpu-1", [0])]), settings);
    expect(kinds(actions)).not.toContain("withdraw");
    expect(actions.find((action) => action.kind === "placement" && action.model === "batch")).toMatchObject({ state: "unplaceable" });
  });

  it("scales a surplus down by giving up the replicas that serve nothing yet, never one started by hand", () => {
    const replicas = [replica("hand", "qwen", "gpu-1", [0], { managed: false }), replica("a", "qwen", "gpu-1", [1], { state: "starting" })];
    const actions = diff({ models: [model("qwen", { placement: { state: "placed", reason: null } })] }, observed([node("gpu-1")], replicas), settings);
    expect(actions).toEqual([{ kind: "withdraw", id: "a", model: "qwen", node: "gpu-1", reason: "qwen needs 1 replica now" }]);
  });
});

describe("desiredCount", () => {
  const idle = { ready: 0, live: 0, inFlight: 0 };
  it("keeps 0/0 in the catalog only, and min otherwise", () => {
    expect(desiredCount(model("m", { min: 0, max: 0 }), idle, now, 1000).count).toBe(0);
    expect(desiredCount(model("m", { min: 2, max: 3 }), idle, now, 1000).count).toBe(2);
  });

  it("runs an on-demand model from a demand until idle_timeout without requests, and while requests are in flight", () => {
    const onDemand = model("m", { min: 0, max: 2, idleTimeoutMs: 60_000 });
    expect(desiredCount(onDemand, idle, now, 1000).count).toBe(0);
    expect(desiredCount({ ...onDemand, demandAtMs: now - 59_000 }, idle, now, 1000).count).toBe(1);
    expect(desiredCount({ ...onDemand, demandAtMs: now - 61_000 }, idle, now, 1000).count).toBe(0);
    expect(desiredCount({ ...onDemand, demandAtMs: now - 61_000 }, { ready: 1, live: 1, inFlight: 2 }, now, 1000).count).toBe(1);
  });

  it("lets the replica a demand started finish starting, however long past idle_timeout its load takes", () => {
    const onDemand = model("m", { min: 0, max: 1, idleTimeoutMs: 3_000, demandAtMs: now - 10_000 });
    expect(desiredCount(onDemand, { ready: 0, live: 1, inFlight: 0 }, now, 1000).count).toBe(1);
    // Once it serves, idle time runs again: with no request since, it goes.
    expect(desiredCount(onDemand, { ready: 1, live: 1, inFlight: 0 }, now, 1000).count).toBe(0);
  });

  it("keeps an on-demand replica that is still loading when its demand is older than idle_timeout, and renews the demand so idle time counts from ready", () => {
    const onDemand = model("m", { min: 0, max: 1, idleTimeoutMs: 3_000, demandAtMs: now - 10_000, placement: { state: "placed", reason: null } });
    const loading = [replica("m-a", "m", "gpu-1", [0], { state: "starting" })];
    const actions = diff({ models: [onDemand] }, observed([node("gpu-1")], loading), settings);
    expect(kinds(actions)).toEqual(["demand-seen"]);
    // The same replica ready, with the demand as old: it is withdrawn.
    const ready = diff({ models: [onDemand] }, observed([node("gpu-1")], [replica("m-a", "m", "gpu-1", [0])]), settings);
    expect(kinds(ready)).toContain("withdraw");
  });

  it("grows one replica at a time toward max while replicas carry more than the target, and shrinks after the cool-down", () => {
    const target = model("m", { min: 1, max: 3, targetInFlight: 4 });
    expect(desiredCount(target, { ready: 1, live: 1, inFlight: 9 }, now, 1000)).toEqual({ count: 2, busy: true });
    expect(desiredCount(target, { ready: 3, live: 3, inFlight: 100 }, now, 1000)).toEqual({ count: 3, busy: true });
    expect(desiredCount({ ...target, busyAtMs: now - 500 }, { ready: 3, live: 3, inFlight: 1 }, now, 1000).count).toBe(3);
    expect(desiredCount({ ...target, busyAtMs: now - 1500 }, { ready: 3, live: 3, inFlight: 1 }, now, 1000).count).toBe(2);
  });
});

describe("backoffMs", () => {
  it("waits 10 s after the first failure, doubling to at most 5 minutes", () => {
    expect([1, 2, 3, 4, 5, 6, 7, 50].map((failures) => backoffMs(failures, 10_000, 300_000))).toEqual([10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000, 300_000]);
    expect(backoffMs(0, 10_000, 300_000)).toBe(0);
  });
});

describe("diff with a canary", () => {
  const nodes = [node("gpu-1"), node("gpu-2")];
  const desired = (overrides: Partial<DesiredModel> = {}) => model("qwen", { min: 2, max: 2, placement: { state: "placed", reason: null }, ...overrides });
  const running = (id: string, nodeName: string, card: number, overrides: Partial<ObservedReplica> = {}) => replica(id, "qwen", nodeName, [card], overrides);
  const stable = [running("qwen-a", "gpu-1", 0), running("qwen-b", "gpu-2", 0)];
  const canaryArm = desired({ min: 1, max: 1, canary: { revision: "v2" }, placement: undefined });

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
