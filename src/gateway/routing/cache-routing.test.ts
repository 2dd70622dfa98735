import Fastify from "fastify";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { startSimEngine } from "../../engines/sim/sim-engine.js";
import type { RoutingModel } from "../../protocol/routing-table.js";
import { gatewayServerFactory } from "../front/gateway-server-factory.js";
import { registerGatewayRoutes } from "../front/register-gateway-routes.js";
import { openPolicy } from "../policy/open-policy.js";
import { Gateway } from "../request/gateway.js";
import { routingModel } from "../testing/routing-model.js";

const started: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const item of started.splice(0).reverse()) await item.close().catch(() => undefined);
});

/** A gateway in front of three simulated vLLM replicas of "chat", routed as `routing` says. */
async function fleet(routing: RoutingModel["routing"], random?: () => number): Promise<OpenAI> {
  const replicas = [];
  for (const id of ["r1", "r2", "r3"]) {
    const engine = await startSimEngine({ engine: "vllm", argv: ["serve", "/weights", "--port", "0", "--served-model-name", "chat"], environment: {}, log: () => undefined });
    started.push(engine);
    replicas.push({ id, endpoint: engine.url, node: "node-1", state: "ready" as const });
  }
  const gateway = new Gateway({ policy: openPolicy, reportDemand: () => undefined, environment: {}, log: { warn: () => undefined }, ...(random ? { random } : {}) });
  gateway.swap({ revision: 1, models: [routingModel("chat", { routing, replicas })], aliases: {} });
  const app = Fastify({ logger: false, serverFactory: gatewayServerFactory(gateway, { warn: () => undefined }) });
  registerGatewayRoutes(app, gateway);
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  started.push({ close: () => app.close() });
  return new OpenAI({ baseURL: `${url}/v1`, apiKey: "k", maxRetries: 0, timeout: 30_000 });
}

/** Four conversations of five turns, one turn each in rotation; the cached tokens each later turn reported. */
async function converse(client: OpenAI): Promise<number[]> {
  const conversations: OpenAI.Chat.ChatCompletionMessageParam[][] = [0, 1, 2, 3].map((index) => [
    { role: "system", content: `You are assistant number ${index}. ${"Answer with care and cite what you rely on. ".repeat(20)}` },
  ]);
  const cached: number[] = [];
  for (let turn = 0; turn < 5; turn += 1) {
    for (const messages of conversations) {
      messages.push({ role: "user", content: `Question ${turn}: ${"tell me more about the sea ".repeat(8)}` });
      const answer = await client.chat.completions.create({ model: "chat", messages, max_tokens: 24 });
      messages.push({ role: "assistant", content: answer.choices[0]?.message.content ?? "" });
      if (turn > 0) cached.push(answer.usage?.prompt_tokens_details?.cached_tokens ?? 0);
    }
  }
  return cached;
}

describe("routing by cache, through the gateway to engines with prefix caches", () => {
  it("sends each conversation's later turns where its earlier turns were read", async () => {
    const cached = await converse(await fleet("cache"));
    expect(cached).toHaveLength(16);
    expect(cached.every((tokens) => tokens > 0)).toBe(true);
  });

  it("misses the cache on some later turns when the replica is chosen by load alone", async () => {
    // The random draws of fewest-in-flight (idle replicas, so a fair pick of two), fixed so the test is repeatable.
    let seed = 7;
    const random = () => ((seed = (seed * 48271) % 2147483647) / 2147483647);
    const cached = await converse(await fleet("least", random));
    expect(cached.filter((tokens) => tokens === 0).length).toBeGreaterThan(0);
  });
});
