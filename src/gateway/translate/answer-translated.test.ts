import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import Anthropic from "@anthropic-ai/sdk";
import Fastify from "fastify";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { startSimEngine, type SimEngineHandle } from "../../engines/sim/sim-engine.js";
import type { RoutingModel } from "../../protocol/routing-table.js";
import { gatewayServerFactory } from "../front/gateway-server-factory.js";
import { registerGatewayRoutes } from "../front/register-gateway-routes.js";
import { GatewayRefusal } from "../wire/gateway-refusal.js";
import type { GatewayCaller, GatewayPolicy, UsageRecord } from "../policy/gateway-policy.js";
import { Gateway } from "../request/gateway.js";
import { routingModel } from "../testing/routing-model.js";

/**
 * The translated routes on the gateway's own request path: a key in
 * Anthropic's header, fallbacks, usage, and the pass-through of Responses
 * to an engine that serves it, against simulated engines over real HTTP.
 */
const replicaKey = "llmgw_replica_test-key-0123456789abcdef";
const started: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const item of started.splice(0).reverse()) await item.close().catch(() => undefined);
});

async function simEngine(engine: "vllm" | "llamacpp", argv: string[]): Promise<SimEngineHandle> {
  const handle = await startSimEngine({ engine, argv, environment: { VLLM_API_KEY: replicaKey, LLAMA_API_KEY: replicaKey }, log: () => undefined });
  started.push(handle);
  return handle;
}

/** An address nothing listens on: a replica there refuses every connection. */
async function deadEndpoint(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

function model(name: string, endpoint: string, extra: Partial<RoutingModel> = {}): RoutingModel {
  return routingModel(name, { replicas: [{ id: `${name}-1`, endpoint, node: "node-1", state: "ready", api_key: replicaKey }], ...extra });
}

/** One key, "good-key", that may use any model; every answer's usage is kept. */
function keyPolicy(records: UsageRecord[]): GatewayPolicy {
  const caller: GatewayCaller = { key: "team", allowedModels: null };
  return {
    authenticate: (authorization) => {
      if (authorization === "Bearer good-key") return caller;
      throw new GatewayRefusal(401, "authentication_error", "invalid_api_key", "this key is not one the gateway issued");
    },
    admit: () => undefined,
    record: (usage) => {
      records.push(usage);
    },
  };
}

async function gatewayWith(models: RoutingModel[], records: UsageRecord[] = []): Promise<string> {
  const gateway = new Gateway({ policy: keyPolicy(records), reportDemand: () => undefined, environment: {}, log: { warn: () => undefined } });
  const app = Fastify({ logger: false, serverFactory: gatewayServerFactory(gateway, { warn: () => undefined }) });
  registerGatewayRoutes(app, gateway);
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  started.push({ close: () => app.close() });
  gateway.swap({ revision: 1, models, aliases: {} });
  return url;
}

describe("the translated routes on the gateway's request path", () => {
  it("falls back for a Messages request as for a chat completion, and records the usage of the model that answered", async () => {
    const engine = await simEngine("vllm", ["serve", "/weights", "--port", "0", "--served-model-name", "second"]);
    const records: UsageRecord[] = [];
    const url = await gatewayWith([model("first", await deadEndpoint(), { fallbacks: ["second"] }), model("second", engine.url)], records);
    const { data: message, response } = await new Anthropic({ baseURL: url, apiKey: "good-key", maxRetries: 0 }).messages.create({ model: "first", max_tokens: 6, messages: [{ role: "user", content: "Hi" }] }).withResponse();
    expect(response.headers.get("x-llmgw-model")).toBe("second");
    expect(message.content[0]?.type).toBe("text");
    expect(records).toEqual([{ caller: { key: "team", allowedModels: null }, model: "second", promptTokens: message.usage.input_tokens, completionTokens: message.usage.output_tokens, error: false }]);

    const refused = await new Anthropic({ baseURL: url, apiKey: "bad-key", maxRetries: 0 }).messages.create({ model: "first", max_tokens: 6, messages: [{ role: "user", content: "Hi" }] }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(Anthropic.AuthenticationError);
    expect((refused as Anthropic.AuthenticationError).message).toContain("invalid_api_key: this key is not one the gateway issued");
  });

  it("passes a Responses request through to an engine that serves it, and translates it for one that does not", async () => {
    const vllm = await simEngine("vllm", ["serve", "/weights", "--port", "0", "--served-model-name", "gpu"]);
    const llama = await simEngine("llamacpp", ["--model", "/w.gguf", "--port", "0", "--alias", "cpu"]);
    const url = await gatewayWith([model("gpu", vllm.url), model("cpu", llama.url, { engine: "llamacpp" })]);
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "good-key", maxRetries: 0 });
    const passed = await client.responses.create({ model: "gpu", input: "Hi", max_output_tokens: 8 });
    const translated = await client.responses.create({ model: "cpu", input: "Hi", max_output_tokens: 8 });
    for (const answer of [passed, translated]) {
      expect(answer.object).toBe("response");
      expect(answer.output_text.length).toBeGreaterThan(0);
    }
    // The simulated vLLM names its own responses; the translation names them after the chat completion it asked for.
    expect(passed.id).not.toMatch(/^resp_chatcmpl/);
    expect(translated.id).toMatch(/^resp_chatcmpl/);
  });

  it("answers a body too large for the gateway in Anthropic's shape on its routes", async () => {
    const url = await gatewayWith([]);
    const answer = await fetch(`${url}/v1/messages`, { method: "POST", headers: { "content-type": "application/json", "x-api-key": "good-key" }, body: "x".repeat(33 * 1024 * 1024) });
    expect(answer.status).toBe(413);
    expect(await answer.json()).toMatchObject({ type: "error", error: { type: "request_too_large" } });
  });
});
