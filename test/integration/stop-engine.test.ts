import { spawn } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { killGroup } from "../support/fake-engine.js";
import { markerEnvironment } from "../../src/agent/engine-marker.js";
import { isProcessAlive } from "../../src/agent/engine-process.js";
import { stopEngine } from "../../src/agent/stop-engine.js";

const groups: number[] = [];
afterEach(() => {
  for (const group of groups.splice(0)) killGroup(group);
});

/** A program in a process group of its own, as the agent starts an engine. */
function detached(environment: Record<string, string> = {}): number {
  const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { detached: true, stdio: "ignore", env: { ...process.env, ...environment } });
  child.unref();
  const pid = child.pid as number;
  groups.push(pid);
  return pid;
}

const agentDirectory = "/var/lib/llmgw-agent-stop-test";
const launchId = "f".repeat(24);

describe("stopEngine", () => {
  it("leaves alone a process group that carries no marker of the engine: its id may have been reused by another program", async () => {
    const stranger = detached();
    const outcome = await stopEngine({ processGroup: stranger, launchId, agentDirectory }, 200);
    expect(outcome).toEqual({ killed: false, survivors: [] });
    expect(await isProcessAlive(stranger)).toBe(true);
  });

  it("ends every process carrying the engine's launch marker, in whatever group", async () => {
    const marker = { agentDirectory, node: "gpu-1", replicaId: "r1", launchId, model: "tiny", profile: "default", engine: "vllm" as const, cards: [0] };
    const leader = detached(markerEnvironment(marker));
    const escaped = detached(markerEnvironment(marker));
    const otherLaunch = detached(markerEnvironment({ ...marker, launchId: "e".repeat(24) }));
    const outcome = await stopEngine({ processGroup: leader, launchId, agentDirectory }, 2000);
    expect(outcome.survivors).toEqual([]);
    expect(await isProcessAlive(leader)).toBe(false);
    expect(await isProcessAlive(escaped)).toBe(false);
    expect(await isProcessAlive(otherLaunch)).toBe(true);
  });
});
