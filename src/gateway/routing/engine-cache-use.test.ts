import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { vllmDriver } from "../../engines/drivers/vllm.js";
import { testLaunchInput } from "../../engines/drivers/test-launch-input.js";
import { startSimEngine, type SimEngineHandle } from "../../engines/sim/sim-engine.js";
import type { RoutingModel } from "../../protocol/routing-table.js";
import { EngineCacheUse } from "./engine-cache-use.js";

const running: SimEngineHandle[] = [];
const readers: EngineCacheUse[] = [];

afterEach(async () => {
  for (const reader of readers.splice(0)) reader.close();
  await Promise.all(running.splice(0).map((sim) => sim.close()));
});

/** A simulated vLLM with a small KV cache (one sequence of 512 tokens), answering slowly enough that a request holds its cache while the test reads it. */
async function slowSim(): Promise<SimEngineHandle> {
  const launch = vllmDriver.build(testLaunchInput({ port: 0, context: 512, extraArgs: ["--max-num-seqs", "1"] }));
  const sim = await startSimEngine({ engine: "vllm", argv: launch.argv.slice(1), environment: { ...launch.env, LLMGW_SIM_SPEED: "0.01" }, log: () => undefined, exit: () => undefined });
  running.push(sim);
  return sim;
}

function modelRoutedBy(routing: RoutingModel["routing"], endpoint: string): RoutingModel {
  return {
    name: "qwen",
    aliases: [],
    engine: "vllm",
    routing,
    replicas: [{ id: "r1", node: "gpu-1", endpoint, state: "ready" }],
  } as unknown as RoutingModel; // only the fields the reader looks at; the rest of a model does not matter to it
}

describe("EngineCacheUse", () => {
  it("reads a replica's KV cache use from its engine's metrics while a request holds it, and forgets a replica that left", async () => {
    const sim = await slowSim();
    const reader = new EngineCacheUse();
    readers.push(reader);
    const replica = { id: "r1", node: "gpu-1", endpoint: sim.url, state: "ready" as const };
    reader.retain([modelRoutedBy("cache", sim.url)]);

    await reader.readAll();
    expect(reader.use(replica)).toBe(0);

    const client = new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const held = new AbortController();
    const stream = await client.chat.completions.create(
      { model: "qwen2.5-7b", messages: [{ role: "user", content: "a question long enough to take a share of a small cache ".repeat(4) }], max_tokens: 200, stream: true },
      { signal: held.signal },
    );
    const iterator = stream[Symbol.asyncIterator]();
    await iterator.next();
    await reader.readAll();
    const inUse = reader.use(replica);
    expect(inUse).toBeGreaterThan(0);
    expect(inUse).toBeLessThanOrEqual(1);
    held.abort();

    reader.retain([]);
    expect(reader.use(replica)).toBeUndefined();
  });

  it("reads nothing for a model routed by fewest in flight, and counts a replica it cannot reach as unknown", async () => {
    const sim = await slowSim();
    const reader = new EngineCacheUse();
    readers.push(reader);
    reader.retain([modelRoutedBy("least", sim.url)]);
    await reader.readAll();
    expect(reader.use({ id: "r1", node: "gpu-1", endpoint: sim.url, state: "ready" })).toBeUndefined();

    reader.retain([modelRoutedBy("cache", "http://127.0.0.1:9")]);
    await reader.readAll();
    expect(reader.use({ id: "r1", node: "gpu-1", endpoint: "http://127.0.0.1:9", state: "ready" })).toBeUndefined();
  });

  it("forgets a reading a few seconds old, so a replica whose metrics stopped answering is not held to its last figure", async () => {
    const sim = await slowSim();
    let clock = 1_000_000;
    const reader = new EngineCacheUse(() => clock);
    readers.push(reader);
    const replica = { id: "r1", node: "gpu-1", endpoint: sim.url, state: "ready" as const };
    reader.retain([modelRoutedBy("cache", sim.url)]);
    await reader.readAll();
    expect(reader.use(replica)).toBe(0);
    clock += 5_000;
    expect(reader.use(replica)).toBe(0);
    clock += 1;
    expect(reader.use(replica)).toBeUndefined();
  });
});
