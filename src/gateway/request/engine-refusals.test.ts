import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import Fastify from "fastify";
import fc from "fast-check";
import OpenAI from "openai";
import { Agent, request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSimEngine, type SimEngineHandle } from "../../engines/sim/sim-engine.js";
import { Gateway } from "./gateway.js";
import { openPolicy } from "../policy/open-policy.js";
import { registerGatewayRoutes } from "../front/register-gateway-routes.js";
import { gatewayServerFactory } from "../front/gateway-server-factory.js";
import { routingModel } from "../testing/routing-model.js";

/**
 * Every /v1 error a client gets is in OpenAI's shape, whoever refused: the
 * gateway's own checks, or an engine in its own words (vLLM's
 * `{"object":"error",...}`, llama-server's `{"error":{"code":400,...}}`, the
 * simulated engine's). The engines that cannot run here are stood in for by
 * servers that answer exactly their documented refusal bodies.
 */

const replicaKey = "llmgw_replica_test-key-0123456789abcdef";
const refusals: Record<string, { status: number; body: string }> = {
  vllm: { status: 400, body: JSON.stringify({ object: "error", message: "max_tokens must be at least 1, got 0.", type: "BadRequestError", param: null, code: 400 }) },
  llamacpp: { status: 400, body: JSON.stringify({ error: { code: 400, message: "'messages' must be an array of at least one message", type: "invalid_request_error" } }) },
  plain: { status: 422, body: "Unprocessable Entity" },
};

let engine: SimEngineHandle;
let standIn: Server;
let url: string;
let close: () => Promise<void>;

beforeAll(async () => {
  engine = await startSimEngine({ engine: "vllm", argv: ["serve", "/weights", "--port", "0", "--served-model-name", "sim"], environment: { VLLM_API_KEY: replicaKey }, log: () => undefined });
  standIn = createServer((incoming, response) => {
    incoming.resume();
    const refusal = refusals[(incoming.url ?? "").split("/")[1] ?? ""] ?? { status: 400, body: "" };
    response.writeHead(refusal.status, { "content-type": refusal.body.startsWith("{") ? "application/json" : "text/plain" });
    response.end(refusal.body);
  });
  await new Promise<void>((resolve) => standIn.listen(0, "127.0.0.1", resolve));
  const standInUrl = `http://127.0.0.1:${(standIn.address() as AddressInfo).port}`;
  const gateway = new Gateway({ policy: openPolicy, reportDemand: () => undefined, environment: {}, log: { warn: () => undefined } });
  const app = Fastify({ logger: false, serverFactory: gatewayServerFactory(gateway, { warn: () => undefined }) });
  registerGatewayRoutes(app, gateway);
  url = await app.listen({ host: "127.0.0.1", port: 0 });
  const replica = (id: string, endpoint: string) => ({ id, endpoint, node: "node-1", state: "ready" as const, api_key: replicaKey });
  gateway.swap({
    revision: 1,
    aliases: {},
    models: [
      routingModel("sim", { replicas: [replica("sim-1", engine.url)] }),
      ...Object.keys(refusals).map((name) => routingModel(name, { replicas: [replica(`${name}-1`, `${standInUrl}/${name}`)] })),
    ],
  });
  close = async () => {
    await app.close();
    await engine.close();
    await new Promise<void>((resolve) => standIn.close(() => resolve()));
  };
});

afterAll(async () => close?.());

const isOpenAIError = (value: unknown): boolean => {
  if (value === null || typeof value !== "object" || Object.keys(value).join() !== "error") return false;
  const error = (value as { error: Record<string, unknown> }).error;
  return (
    typeof error.message === "string" &&
    error.message.length > 0 &&
    typeof error.type === "string" &&
    (error.param === null || typeof error.param === "string") &&
    (error.code === null || typeof error.code === "string")
  );
};

describe("an engine's refusal on /v1", () => {
  it("reaches the official client in OpenAI's shape, with the engine's own words, for vLLM, llama-server, plain text and the simulated engine", async () => {
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "any", maxRetries: 0 });
    const expected: Record<string, { status: number; words: string }> = {
      vllm: { status: 400, words: "max_tokens must be at least 1, got 0." },
      llamacpp: { status: 400, words: "'messages' must be an array of at least one message" },
      plain: { status: 422, words: "Unprocessable Entity" },
      // A field the gateway does not read, in a shape the simulated engine refuses.
      sim: { status: 400, words: "lora" },
    };
    for (const [model, { status, words }] of Object.entries(expected)) {
      const refused = await client.chat.completions.create({ model, messages: [{ role: "user", content: "hi" }], ...(model === "sim" ? { lora: "not-a-list" } : {}) } as OpenAI.ChatCompletionCreateParamsNonStreaming).catch((error: unknown) => error);
      expect(refused, model).toBeInstanceOf(OpenAI.APIError);
      const error = refused as InstanceType<typeof OpenAI.APIError>;
      expect(error.status, model).toBe(status);
      expect(error.error, model).toMatchObject({ type: "invalid_request_error", message: expect.stringContaining(words) });
      expect(isOpenAIError({ error: error.error }), model).toBe(true);
      expect(error.error, model).not.toHaveProperty("object");
    }
  });
});

describe("malformed OpenAI bodies through the gateway (property)", () => {
  it("answers every one 4xx in OpenAI's shape: never an engine's own shape, never a 5xx", async () => {
    const dispatcher = new Agent({ connections: 4 });
    const json = fc.jsonValue({ maxDepth: 3 });
    const message = fc.oneof(
      fc.record({ role: fc.constantFrom("user", "system", "assistant", "tool", "robot", ""), content: fc.oneof(fc.string(), json) }, { requiredKeys: [] }),
      json,
    );
    const body = fc.record(
      {
        model: fc.oneof(fc.constant("sim"), fc.constant("vllm"), fc.constant("nope"), fc.constant(""), json),
        messages: fc.oneof(fc.array(message, { maxLength: 3 }), json),
        max_tokens: fc.oneof(fc.constantFrom(0, -1, 1.5, 300_000, "10"), json),
        stream: fc.oneof(fc.boolean(), json),
        lora: json,
        n: json,
        temperature: json,
      },
      { requiredKeys: [] },
    );
    const payload = fc.oneof(
      { weight: 8, arbitrary: body.map((value) => JSON.stringify(value)) },
      { weight: 1, arbitrary: fc.string() },
      { weight: 1, arbitrary: json.map((value) => JSON.stringify(value)) },
    );
    const endpoint = fc.constantFrom("chat/completions", "completions", "embeddings");
    const answers = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(endpoint, payload, async (path, text) => {
        const answer = await request(`${url}/v1/${path}`, { method: "POST", body: text, headers: { "content-type": "application/json" }, dispatcher });
        const received = await answer.body.text();
        answers.set(answer.statusCode, (answers.get(answer.statusCode) ?? 0) + 1);
        // A body that happens to be a valid request is answered; every other is a refusal in OpenAI's shape.
        if (answer.statusCode === 200) return;
        expect(answer.statusCode, `${path} ${text}: ${received}`).toBeGreaterThanOrEqual(400);
        expect(answer.statusCode, `${path} ${text}: ${received}`).toBeLessThan(500);
        expect(isOpenAIError(JSON.parse(received)), `${path} ${text}: ${received}`).toBe(true);
      }),
      { numRuns: 600 },
    );
    await dispatcher.close();
    // Most are refused: the fuzz is of malformed bodies, not of answers.
    expect([...answers.entries()].filter(([status]) => status >= 400).reduce((sum, [, count]) => sum + count, 0)).toBeGreaterThan(400);
  }, 60_000);
});
