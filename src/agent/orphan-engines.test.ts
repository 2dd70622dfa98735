import { describe, expect, it } from "vitest";
import { markerEnvironment, readMarker, type EngineMarker } from "./engine-marker.js";
import type { MarkedProcess } from "./find-marked-processes.js";
import { orphanEngines } from "./orphan-engines.js";

const marker = (replicaId: string, launchId: string): EngineMarker => ({
  agentDirectory: "/var/lib/llmgw-agent",
  node: "gpu-1",
  replicaId,
  launchId,
  model: "qwen",
  profile: "default",
  engine: "vllm",
  cards: [0, 1],
});
const launchA = "a".repeat(24);
const launchB = "b".repeat(24);
const process_ = (pid: number, processGroup: number, startTicks: string, mark: EngineMarker | undefined): MarkedProcess => ({ pid, processGroup, startTicks, state: "S", marker: mark });

describe("the engine marker", () => {
  it("reads back what it wrote", () => {
    expect(readMarker(markerEnvironment(marker("r1", launchA)))).toEqual(marker("r1", launchA));
  });

  it("reads a damaged marker as none, since an engine may rewrite its own environment", () => {
    const environment = markerEnvironment(marker("r1", launchA));
    expect(readMarker({ ...environment, LLMGW_ENGINE: "not-an-engine" })).toBeUndefined();
    expect(readMarker({ ...environment, LLMGW_CARDS: "0,x" })).toBeUndefined();
    expect(readMarker({ ...environment, LLMGW_REPLICA_ID: "../escape" })).toBeUndefined();
    expect(readMarker({ ...environment, LLMGW_LAUNCH_ID: "" })).toBeUndefined();
  });
});

describe("orphanEngines", () => {
  it("groups processes by launch, with the spawned process (its group's leader) as leader, a worker that left the group included", () => {
    const found = [process_(200, 100, "5002", marker("r1", launchA)), process_(100, 100, "5000", marker("r1", launchA)), process_(300, 300, "5003", marker("r1", launchA))];
    const [engine, ...rest] = orphanEngines(found, { launchIds: new Set(), processGroups: new Set() });
    expect(rest).toEqual([]);
    expect(engine?.leader?.pid).toBe(100);
    expect(engine?.processes.map((process) => process.pid).sort()).toEqual([100, 200, 300]);
  });

  it("leaves out what the records account for, by launch or by process group (engines started before markers)", () => {
    const found = [process_(100, 100, "1", marker("r1", launchA)), process_(400, 400, "2", marker("r2", launchB)), process_(500, 500, "3", marker("r3", "c".repeat(24)))];
    const orphans = orphanEngines(found, { launchIds: new Set([launchA]), processGroups: new Set([400]) });
    expect(orphans.map((engine) => engine.marker?.replicaId)).toEqual(["r3"]);
  });

  it("has no leader when only workers remain, and groups processes with a damaged marker by process group", () => {
    const orphans = orphanEngines([process_(201, 100, "9", marker("r1", launchA)), process_(700, 700, "1", undefined), process_(701, 700, "2", undefined)], {
      launchIds: new Set(),
      processGroups: new Set(),
    });
    expect(orphans).toHaveLength(2);
    expect(orphans[0]).toMatchObject({ leader: undefined, marker: { replicaId: "r1" } });
    expect(orphans[1]).toMatchObject({ leader: { pid: 700 }, marker: undefined });
    expect(orphans[1]?.processes).toHaveLength(2);
  });
});
