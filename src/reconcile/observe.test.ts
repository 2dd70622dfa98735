import { describe, expect, it } from "vitest";
import { at, chat, GiB, intent, node, row } from "../../test/support/fleet-state.js";
import { observe, replacedByRestart, type FleetState } from "./observe.js";

const nowMs = Date.parse("2026-03-01T10:05:00.000Z");

const empty: FleetState = { models: [chat], statuses: [], nodes: [], rows: [], intents: [], canaries: [] };

describe("observe", () => {
  it("takes the time it is given and keeps what was read, reading nothing itself", () => {
    const state: FleetState = { ...empty, nodes: [node("gpu-1")], rows: [row("r-1", "gpu-1", "gpu")], intents: [intent("r-1")] };
    const observation = observe(state, nowMs);
    expect(observation.observed.nowMs).toBe(nowMs);
    expect(observation.models).toBe(state.models);
    expect(observation.rows).toBe(state.rows);
    expect(observation.modelOf.get("chat")).toBe(chat);
    // The same input, the same answer: a pass and a dry run asking at one moment see one fleet.
    expect(observe(state, nowMs)).toEqual(observation);
  });

  it("marks a node schedulable only when ready and not cordoned, and prices its cards with the memory others hold", () => {
    const observation = observe({ ...empty, nodes: [node("a"), node("b", { cordoned: true }), node("c", { state: "lost" })] }, nowMs);
    expect(observation.observed.nodes.map((seen) => [seen.name, seen.schedulable])).toEqual([
      ["a", true],
      ["b", false],
      ["c", false],
    ]);
    expect(observation.observed.nodes[0]?.cards).toEqual([{ index: 0, cardClass: "h100", memoryBytes: 80 * GiB, fabric: "nvl0", foreignBytes: 2 * GiB }]);
    expect(observation.observed.nodes[0]).toMatchObject({ memoryBytes: 256 * GiB, cpuCores: 32, engines: ["vllm", "llamacpp"] });
  });

  it("reads a replica's intent: managed, when placed and withdrawn, and whether it is a canary", () => {
    const state: FleetState = {
      ...empty,
      nodes: [node("gpu-1")],
      rows: [row("r-1", "gpu-1", "gpu"), row("r-2", "gpu-1", "gpu", { created_at: "2026-03-01T08:00:00.000Z" }), row("r-3", "gpu-1", "gpu")],
      intents: [intent("r-1", { withdrawn_at: "2026-03-01T09:30:00.000Z" }), intent("r-3", { arm: "canary" })],
    };
    const [withdrawn, byHand, canary] = observe(state, nowMs).observed.replicas;
    expect(withdrawn).toMatchObject({ managed: true, placedAtMs: Date.parse("2026-03-01T09:00:00.000Z"), withdrawnAtMs: Date.parse("2026-03-01T09:30:00.000Z"), inFlight: 5 });
    expect(withdrawn?.arm).toBeUndefined();
    // Started by hand: no intent, so placed when its row was made, and not the reconciler's to replace.
    expect(byHand).toMatchObject({ managed: false, placedAtMs: Date.parse("2026-03-01T08:00:00.000Z"), withdrawnAtMs: undefined });
    expect(canary?.arm).toBe("canary");
  });

  it("calls a replica on a lost node lost, unless it already ended, and a row its agent never confirmed pending", () => {
    const state: FleetState = {
      ...empty,
      nodes: [node("gone", { state: "lost" }), node("here")],
      rows: [row("r-live", "gone", "gpu"), row("r-failed", "gone", "gpu", { state: "failed" }), row("r-new", "here", "gpu", { pending: true, state: "fetching" })],
    };
    expect(observe(state, nowMs).observed.replicas.map((replica) => [replica.id, replica.state])).toEqual([
      ["r-live", "lost"],
      ["r-failed", "failed"],
      ["r-new", "pending"],
    ]);
  });

  it("prices a CPU replica by its profile's cores, and a replica of a model no longer in the catalog at nothing", () => {
    const state: FleetState = { ...empty, nodes: [node("cpu-1")], rows: [row("r-cpu", "cpu-1", "cpu"), row("r-old", "cpu-1", "cpu", { model: "removed" })] };
    const [cpu, old] = observe(state, nowMs).observed.replicas;
    expect(cpu).toMatchObject({ cpuCores: 6 });
    expect(old).toMatchObject({ cpuCores: 0, memoryBytes: 0 });
  });

  it("names the nodes whose agents run the simulated engine", () => {
    const observation = observe({ ...empty, nodes: [node("real"), node("sim", { simulated: true })] }, nowMs);
    expect([...observation.simulatedNodes]).toEqual(["sim"]);
  });
});

describe("replacedByRestart", () => {
  const state: FleetState = {
    ...empty,
    nodes: [node("gpu-1"), node("gone", { state: "lost" })],
    rows: [row("live", "gpu-1", "gpu"), row("by-hand", "gpu-1", "gpu"), row("leaving", "gpu-1", "gpu"), row("lost", "gone", "gpu"), row("failed", "gpu-1", "gpu", { state: "failed" })],
    intents: [intent("live"), intent("leaving", { withdrawn_at: at }), intent("lost"), intent("failed")],
  };

  it("replaces only the reconciler's own live replicas that are not already leaving", () => {
    const replaced = observe(state, nowMs).observed.replicas.filter((replica) => replacedByRestart(replica, "chat"));
    expect(replaced.map((replica) => replica.id)).toEqual(["live"]);
    expect(observe(state, nowMs).observed.replicas.filter((replica) => replacedByRestart(replica, "other"))).toEqual([]);
  });
});
