import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Fastify from "fastify";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLlamaEngine, type LlamaEngineHandle } from "../../src/engines/llama/llama-engine.js";
import { tinyModelGguf, writeGgufFile } from "../../src/engines/llama/tiny-gguf.js";
import { gatewayServerFactory } from "../../src/gateway/front/gateway-server-factory.js";
import { registerGatewayRoutes } from "../../src/gateway/front/register-gateway-routes.js";
import { openPolicy } from "../../src/gateway/policy/open-policy.js";
import { Gateway } from "../../src/gateway/request/gateway.js";
import { routingModel } from "../../src/gateway/testing/routing-model.js";
import type { RoutingModel } from "../../src/protocol/routing-table.js";

/**
 * Two built-in llama.cpp replicas of the tiny GGUF behind a gateway: routed by
 * cache, a conversation's later turns reach the replica whose slot holds its
 * earlier turns, and the engine reports the prompt read from its cache.
 */
describe("routing by cache to real llama.cpp replicas", () => {
  const directory = mkdtempSync(path.join(tmpdir(), "llmgw-cache-routing-"));
  const engines: LlamaEngineHandle[] = [];
  const closers: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    const model = await writeGgufFile(path.join(directory, "tiny.gguf"), tinyModelGguf());
    for (let index = 0; index < 2; index += 1) {
      const engine = await startLlamaEngine({
        argv: ["--model", model, "--port", "0", "--alias", "tiny", "--ctx-size", "4096", "--parallel", "2", "--threads", "1"],
        environment: {},
        log: () => undefined,
      });
      engines.push(engine);
      await engine.loaded;
    }
  }, 180_000);

  afterAll(async () => {
    for (const close of closers) await close().catch(() => undefined);
    for (const engine of engines) await engine.close().catch(() => undefined);
    rmSync(directory, { recursive: true, force: true });
  });

  async function gateway(routing: RoutingModel["routing"], random?: () => number): Promise<OpenAI> {
    const replicas = engines.map((engine, index) => ({ id: `r${index}`, endpoint: engine.url, node: "local", state: "ready" as const }));
    const built = new Gateway({ policy: openPolicy, reportDemand: () => undefined, environment: {}, log: { warn: () => undefined }, ...(random ? { random } : {}) });
    built.swap({ revision: 1, models: [routingModel("tiny", { routing, engine: "llamacpp", replicas })], aliases: {} });
    const app = Fastify({ logger: false, serverFactory: gatewayServerFactory(built, { warn: () => undefined }) });
    registerGatewayRoutes(app, built);
    const url = await app.listen({ host: "127.0.0.1", port: 0 });
    closers.push(() => app.close());
    return new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0, timeout: 120_000 });
  }

  /** A four-turn conversation opening with `opening`: each turn's prompt tokens, and the cached tokens each later turn reported. */
  async function converse(client: OpenAI, opening: string): Promise<{ prompts: number[]; cached: number[] }> {
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: "system", content: `${opening} You answer briefly about the sea and its tides, its currents and its storms.` }];
    const cached: number[] = [];
    const prompts: number[] = [];
    for (let turn = 1; turn <= 4; turn += 1) {
      messages.push({ role: "user", content: `Turn ${turn}: what happens to the tide when the moon is full, and why?` });
      const answer = await client.chat.completions.create({ model: "tiny", messages, max_tokens: 6, temperature: 0 });
      messages.push({ role: "assistant", content: answer.choices[0]?.message.content ?? "" });
      prompts.push(answer.usage?.prompt_tokens ?? 0);
      if (turn > 1) cached.push(answer.usage?.prompt_tokens_details?.cached_tokens ?? 0);
    }
    return { prompts, cached };
  }

  it("reports the earlier turns read from the cache on every later turn when routed by cache", async () => {
    const client = await gateway("cache");
    for (const opening of ["Alpha.", "Bravo.", "Charlie."]) {
      const { prompts, cached } = await converse(client, opening);
      // Each later turn finds most of the turn before it in the cache (the template's seam with the answer may be read again).
      cached.forEach((tokens, index) => expect(tokens).toBeGreaterThan((prompts[index] as number) / 2));
    }
  }, 300_000);

  it("reads a later turn's whole prompt again when the choice sends it to the other replica", async () => {
    // Fewest in flight between two idle replicas is a pick of two random draws; the first draw of each pick alternates the two.
    const draws = [0, 0, 0.9, 0];
    let draw = 0;
    const client = await gateway("least", () => draws[draw++ % draws.length] as number);
    const { prompts, cached } = await converse(client, "Delta.");
    // The second turn went to the other replica: of the first turn's prompt it found at most the chat template's opening.
    expect(cached[0]).toBeLessThan((prompts[0] as number) / 2);
  }, 300_000);
});
