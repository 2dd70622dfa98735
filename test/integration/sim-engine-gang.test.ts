import { spawn, type ChildProcess } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import type { EngineDriver } from "../../src/engines/driver.js";
import { sglangDriver } from "../../src/engines/drivers/sglang.js";
import { testLaunchInput } from "../../src/engines/drivers/test-launch-input.js";
import { vllmDriver } from "../../src/engines/drivers/vllm.js";
import { waitFor } from "../support/fake-engine.js";
import { llmgwBin } from "../support/processes.js";

/**
 * A replica over two nodes as the agents would run it on the simulated
 * engine: each member the built `llmgw sim-engine` as its own process, given
 * its driver's command line, meeting at the leader's rendezvous over real TCP
 * on 127.0.0.1. A member killed with -9 is a real process gone, its socket
 * closed by the kernel, not by any code of ours.
 */
interface Member {
  readonly child: ChildProcess;
  readonly output: () => string;
  readonly exited: Promise<number | null>;
}

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

function start(driver: EngineDriver, rank: number, leaderPort: number, environment: Record<string, string> = {}): Member {
  const launch = driver.build(testLaunchInput({ port: 0, cards: [0, 1], distributed: { nodes: 2, rank, leaderAddress: "127.0.0.1", port: leaderPort } }));
  const child = spawn(process.execPath, [llmgwBin, "sim-engine", "--engine", driver.engine, "--", ...launch.argv.slice(1)], {
    env: { PATH: process.env["PATH"] ?? "", ...launch.env, ...environment },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let text = "";
  child.stdout?.on("data", (chunk: Buffer) => (text += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (text += chunk.toString()));
  return { child, output: () => text, exited: new Promise((resolve) => child.once("exit", (code) => resolve(code))) };
}

/** The leader's API address and its rendezvous port, from its startup line. */
async function leaderAddresses(leader: Member): Promise<{ url: string; rendezvousPort: number }> {
  const found = await waitFor(() => /on (http:\/\/127\.0\.0\.1:\d+).*healthy once rank 1 joins at 127\.0\.0\.1:(\d+)/.exec(leader.output()) ?? undefined, 30_000, `the leader's startup line in:\n${leader.output()}`);
  return { url: found[1] as string, rendezvousPort: Number(found[2]) };
}

const healthOf = async (url: string) => (await fetch(`${url}/health`)).status;

describe("two simulated engine processes as one replica", () => {
  it("serves once the worker joins; a worker killed with -9 fails the stream in flight with an error event and the leader turns unhealthy", async () => {
    // 10 tokens a second through two stages: the stream below lasts 20 s unless it is cut.
    const slow = { LLMGW_SIM_WEIGHTS_BYTES_PER_CARD: "1000000000", LLMGW_SIM_BANDWIDTH_GBPS: "20" };
    const leader = start(vllmDriver, 0, 0, slow);
    const { url, rendezvousPort } = await leaderAddresses(leader);
    expect(await healthOf(url)).toBe(503);
    const worker = start(vllmDriver, 1, rendezvousPort, slow);
    await waitFor(async () => (await healthOf(url)) === 200, 30_000, "the leader to be healthy");
    expect(leader.output()).toMatch(/rank 1 of 2 joined from 127\.0\.0\.1:\d+; all ranks joined, serving/);

    const response = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "qwen2.5-7b", messages: [{ role: "user", content: "Say hello" }], max_tokens: 200, stream: true }),
    });
    const reader = response.body?.getReader();
    if (reader === undefined) throw new Error("no stream");
    const decoder = new TextDecoder();
    let text = "";
    while ((text.match(/"content":"/g) ?? []).length < 2) text += decoder.decode((await reader.read()).value);
    worker.child.kill("SIGKILL");
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += decoder.decode(chunk.value);

    const events = text.split("\n\n").filter((event) => event.startsWith("data: "));
    expect(events.at(-1)).toBe("data: [DONE]");
    expect(JSON.parse(events.at(-2)?.slice("data: ".length) ?? "{}")).toMatchObject({ error: { code: 500, message: expect.stringContaining("rank 1 (127.0.0.1:") } });
    expect(await healthOf(url)).toBe(503);
    expect(leader.output()).toContain("dropped its connection; the gang is broken: failing the requests in flight and reporting unhealthy");
    // The leader itself stays up, unhealthy, for its agent to see and stop.
    expect(leader.child.exitCode).toBeNull();
  });

  it("ends an SGLang worker with an NCCL-like abort (134) when its leader is killed with -9, and refuses a second rank 1", async () => {
    const leader = start(sglangDriver, 0, 0);
    const { url, rendezvousPort } = await leaderAddresses(leader);
    const worker = start(sglangDriver, 1, rendezvousPort);
    await waitFor(async () => (await healthOf(url)) === 200, 30_000, "the leader to be healthy");

    const twin = start(sglangDriver, 1, rendezvousPort);
    expect(await twin.exited).toBe(1);
    expect(twin.output()).toContain("rank 1 of 2 cannot join: the leader refused it: rank 1 has already joined: two members were given the same --node-rank");
    expect(await healthOf(url)).toBe(200);

    leader.child.kill("SIGKILL");
    expect(await worker.exited).toBe(134);
    expect(worker.output()).toContain(`rank 1 of 2: the leader at 127.0.0.1:${rendezvousPort} dropped the connection; the collective is broken, exiting with status 134`);
  });
});
