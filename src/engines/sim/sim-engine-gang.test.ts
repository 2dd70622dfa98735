import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../../../test/support/fake-engine.js";
import type { EngineDriver } from "../driver.js";
import { sglangDriver } from "../drivers/sglang.js";
import { testLaunchInput } from "../drivers/test-launch-input.js";
import { vllmDriver } from "../drivers/vllm.js";
import { startSimEngine, type SimEngineHandle } from "./sim-engine.js";

const running: SimEngineHandle[] = [];
afterEach(async () => {
  for (const sim of running.splice(0).reverse()) await sim.close();
});

/**
 * 10 tokens a second through two pipeline stages (1 GB a card at 20 GB/s is
 * 20 a stage): long enough that a stream is still under way when a member goes.
 */
const slow = { LLMGW_SIM_WEIGHTS_BYTES_PER_CARD: "1000000000", LLMGW_SIM_BANDWIDTH_GBPS: "20" };

async function member(driver: EngineDriver, rank: number, leaderPort: number, environment: Record<string, string> = {}) {
  const launch = driver.build(testLaunchInput({ port: 0, context: 4096, cards: [0, 1], distributed: { nodes: 2, rank, leaderAddress: "127.0.0.1", port: leaderPort } }));
  const logLines: string[] = [];
  const exitCodes: number[] = [];
  const sim = await startSimEngine({
    engine: driver.engine,
    argv: launch.argv.slice(1),
    environment: { ...launch.env, ...environment },
    log: (line) => logLines.push(line),
    exit: (code) => exitCodes.push(code),
  });
  running.push(sim);
  return { sim, logLines, exitCodes };
}

const health = async (sim: SimEngineHandle) => {
  const response = await fetch(`${sim.url}/health`);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};

const chat = (sim: SimEngineHandle, stream: boolean, maxTokens: number) =>
  fetch(`${sim.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "qwen2.5-7b", messages: [{ role: "user", content: "Say hello" }], max_tokens: maxTokens, stream }),
  });

describe("a simulated replica over two nodes", () => {
  it("serves from rank 0 only once rank 1 has joined its rendezvous", async () => {
    const leader = await member(vllmDriver, 0, 0);
    const port = leader.sim.rendezvousPort ?? 0;
    expect(port).toBeGreaterThan(0);
    expect(await health(leader.sim)).toMatchObject({ status: 503, body: { status: "unhealthy", error: { message: `the simulated engine is not serving: waiting for rank 1 of 2 to join at 127.0.0.1:${port}` } } });
    const refused = await chat(leader.sim, false, 4);
    expect(refused.status).toBe(503);

    const worker = await member(vllmDriver, 1, port);
    // The worker serves no API, only the health its agent waits for, which says it joined.
    await waitFor(async () => (await health(worker.sim)).status === 200, 5000, "the worker to join");
    expect((await fetch(`${worker.sim.url}/v1/models`)).status).toBe(404);
    await waitFor(async () => (await health(leader.sim)).status === 200, 5000, "the leader to become healthy");
    const answer = (await (await chat(leader.sim, false, 4)).json()) as { choices: { message: { content: string } }[] };
    expect(answer.choices[0]?.message.content).toContain("qwen2.5-7b");
    expect(leader.logLines.join("\n")).toContain("rank 1 of 2 joined from 127.0.0.1:");
  });

  it("fails the streams and answers in flight and reports unhealthy when a worker is lost", async () => {
    const leader = await member(vllmDriver, 0, 0, slow);
    const worker = await member(vllmDriver, 1, leader.sim.rendezvousPort ?? 0, slow);
    await waitFor(async () => (await health(leader.sim)).status === 200, 5000, "the leader to become healthy");
    expect(leader.logLines.join("\n")).toContain("decode 10 tokens/s (20 GB/s, 1.0 GB of weights per card (the largest stage's), 2 pipeline stages in turn)");

    const stream = await chat(leader.sim, true, 200);
    const whole = chat(leader.sim, false, 200);
    const reader = stream.body?.getReader();
    if (reader === undefined) throw new Error("no stream body");
    let text = "";
    const decoder = new TextDecoder();
    // Two tokens arrive first: the stream is under way when the worker goes.
    while ((text.match(/"content":"/g) ?? []).length < 2) text += decoder.decode((await reader.read()).value);
    await worker.sim.close();
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += decoder.decode(chunk.value);

    const events = text.split("\n\n").filter((event) => event.startsWith("data: "));
    expect(events.at(-1)).toBe("data: [DONE]");
    const failure = JSON.parse(events.at(-2)?.slice("data: ".length) ?? "{}") as { error?: { message: string; code: number } };
    expect(failure.error).toMatchObject({ code: 500, message: expect.stringMatching(/^the engine's collective operation failed: rank 1 \(127\.0\.0\.1:\d+\) dropped its connection; the gang is broken$/) });
    expect(events.length).toBeLessThan(50); // cut short, far from 200 tokens

    const answered = await whole;
    expect(answered.status).toBe(500);
    expect(((await answered.json()) as { error: { message: string } }).error.message).toContain("dropped its connection");
    expect(await health(leader.sim)).toMatchObject({ status: 503, body: { status: "unhealthy" } });
    expect((await chat(leader.sim, false, 4)).status).toBe(503);
  });

  it("lets an SGLang worker exit 0 when its leader shuts down in order", async () => {
    const leader = await member(sglangDriver, 0, 0);
    const worker = await member(sglangDriver, 1, leader.sim.rendezvousPort ?? 0);
    await waitFor(async () => (await health(leader.sim)).status === 200, 5000, "the leader to become healthy");
    await leader.sim.close();
    await waitFor(() => worker.exitCodes.length > 0, 5000, "the worker to exit");
    expect(worker.exitCodes).toEqual([0]);
    expect(worker.logLines.at(-1)).toBe("llmgw sim-engine: rank 1 of 2: the leader shut down; exiting");
  });
});
