import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import Fastify, { type FastifyInstance } from "fastify";
import OpenAI, { APIError } from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { startSimEngine, type SimEngineHandle } from "../engines/sim/sim-engine.js";
import type { RoutingModel, RoutingTable } from "../protocol/routing-table.js";
import { closedPolicy } from "./closed-policy.js";
import { Gateway } from "./gateway.js";
import { GatewayRefusal, type GatewayPolicy, type UsageRecord } from "./gateway-policy.js";
import { openPolicy } from "./open-policy.js";
import { registerGatewayRoutes } from "./register-gateway-routes.js";
import { gatewayServerFactory } from "./gateway-server-factory.js";
import { routingModel } from "./testing/routing-model.js";

const replicaKey = "llmgw_replica_test-key-0123456789abcdef";

const started: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const item of started.splice(0).reverse()) await item.close().catch(() => undefined);
});

async function simEngine(engine: "vllm" | "llamacpp", argv: string[], environment: Record<string, string> = {}): Promise<SimEngineHandle> {
  const handle = await startSimEngine({ engine, argv, environment: { VLLM_API_KEY: replicaKey, LLAMA_API_KEY: replicaKey, ...environment }, log: () => undefined });
  started.push(handle);
  return handle;
}

function model(name: string, replicas: { id: string; endpoint: string }[], extra: Partial<RoutingModel> = {}): RoutingModel {
  return routingModel(name, { replicas: replicas.map((replica) => ({ ...replica, node: "node-1", state: "ready" as const, api_key: replicaKey })), ...extra });
}

let revision = 1;
const table = (models: RoutingModel[]): RoutingTable => ({ revision: revision++, models, aliases: {} });

async function gatewayApp(policy: GatewayPolicy, options: { maxQueuePerModel?: number; demand?: string[]; environment?: Record<string, string> } = {}): Promise<{ gateway: Gateway; app: FastifyInstance; url: string }> {
  const gateway = new Gateway({
    policy,
    reportDemand: (name) => options.demand?.push(name),
    environment: options.environment ?? {},
    log: { warn: () => undefined },
    ...(options.maxQueuePerModel !== undefined ? { maxQueuePerModel: options.maxQueuePerModel } : {}),
  });
  const app = Fastify({ logger: false, serverFactory: gatewayServerFactory(gateway, { warn: () => undefined }) });
  registerGatewayRoutes(app, gateway);
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  started.push({ close: () => app.close() });
  return { gateway, app, url };
}

const client = (url: string) => new OpenAI({ baseURL: `${url}/v1`, apiKey: "client-key", maxRetries: 0, timeout: 30_000 });

describe("the gateway's request path", () => {
  it("presents the replica's key to the engine, never the client's", async () => {
    const engine = await simEngine("vllm", ["serve", "/weights", "--port", "0", "--served-model-name", "chat"]);
    const { gateway, url } = await gatewayApp(openPolicy);
    gateway.swap(table([model("chat", [{ id: "r1", endpoint: engine.url }])]));
    const answer = await client(url).chat.completions.create({ model: "chat", messages: [{ role: "user", content: "Hi" }], max_tokens: 3 });
    expect(answer.choices[0]?.message.content).toBeTruthy();
    // The same engine refuses the client's own key.
    const direct = await fetch(`${engine.url}/v1/models`, { headers: { authorization: "Bearer client-key" } });
    expect(direct.status).toBe(401);
  });

  it("answers 429 at once, with Retry-After, when the model's queue is full; the queued one is served when a replica comes", async () => {
    const engine = await simEngine("vllm", ["serve", "/weights", "--port", "0", "--served-model-name", "cold"]);
    const demand: string[] = [];
    const { gateway, url } = await gatewayApp(openPolicy, { maxQueuePerModel: 1, demand });
    gateway.swap(table([model("cold", [])]));
    const queued = client(url).chat.completions.create({ model: "cold", messages: [{ role: "user", content: "Hi" }], max_tokens: 3 });
    while (gateway.state.waiting("cold") === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(demand).toContain("cold");
    const refused = await fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "cold", messages: [] }) });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(((await refused.json()) as { error: { code: string; type: string } }).error).toMatchObject({ code: "queue_full", type: "rate_limit_error" });
    gateway.swap(table([model("cold", [{ id: "r1", endpoint: engine.url }])]));
    expect((await queued).choices[0]?.message.content).toBeTruthy();
  });

  it("passes a policy's refusal as it is, and records usage as the engine reported it on streams", async () => {
    const engine = await simEngine("vllm", ["serve", "/weights", "--port", "0", "--served-model-name", "chat"]);
    const records: UsageRecord[] = [];
    const admitted: { name: string; tokens: number }[] = [];
    const policy: GatewayPolicy = {
      authenticate: (authorization) => {
        if (authorization !== "Bearer client-key") throw new GatewayRefusal(401, "authentication_error", "invalid_api_key", "unknown key");
        return { key: "team-a", allowedModels: ["chat"] };
      },
      admit: (_caller, name, tokens) => {
        admitted.push({ name, tokens });
        if (tokens > 500) throw new GatewayRefusal(429, "rate_limit_error", "rate_limit_exceeded", "token rate spent", 7);
      },
      record: (usage) => records.push(usage),
    };
    const { gateway, url } = await gatewayApp(policy);
    gateway.swap(table([model("chat", [{ id: "r1", endpoint: engine.url }])]));

    const refused = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer client-key" },
      body: JSON.stringify({ model: "chat", messages: [{ role: "user", content: "Hi" }], max_tokens: 600 }),
    });
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("7");
    expect(await refused.json()).toEqual({ error: { message: "token rate spent", type: "rate_limit_error", param: null, code: "rate_limit_exceeded" } });

    const unknown = await new OpenAI({ baseURL: `${url}/v1`, apiKey: "wrong", maxRetries: 0 }).models.list().catch((error: unknown) => error);
    expect((unknown as APIError).status).toBe(401);

    const stream = await client(url).chat.completions.create({ model: "chat", messages: [{ role: "user", content: "Hi there" }], max_tokens: 5, stream: true, stream_options: { include_usage: true } });
    let reported: { prompt_tokens: number; completion_tokens: number } | undefined;
    for await (const chunk of stream) reported ??= chunk.usage ?? undefined;
    await new Promise((resolve) => setTimeout(resolve, 20));
    const last = records.at(-1) as UsageRecord;
    expect(last).toMatchObject({ model: "chat", error: false, promptTokens: reported?.prompt_tokens, completionTokens: reported?.completion_tokens });
    expect(admitted.at(-1)).toEqual({ name: "chat", tokens: expect.any(Number) });
    expect((admitted.at(-1)?.tokens ?? 0) - 5).toBeGreaterThan(0);
  });

  it("refuses every /v1 request 401 in OpenAI's shape when keys are required and none is valid", async () => {
    const { url } = await gatewayApp(closedPolicy);
    const error = await client(url).models.list().catch((caught: unknown) => caught);
    expect((error as APIError).status).toBe(401);
    expect((error as APIError).code).toBe("invalid_api_key");
  });

  it("passes an engine's own error through without retrying it elsewhere", async () => {
    const broken = await simEngine("vllm", ["serve", "/weights", "--port", "0", "--served-model-name", "chat"], { LLMGW_SIM_FAULT: "error-500" });
    const { gateway, url } = await gatewayApp(openPolicy);
    gateway.swap(table([model("chat", [{ id: "r1", endpoint: broken.url }])]));
    const error = await client(url).chat.completions.create({ model: "chat", messages: [{ role: "user", content: "Hi" }] }).catch((caught: unknown) => caught);
    expect((error as APIError).status).toBe(500);
    expect((error as APIError).message).toContain("simulated engine failure");
    expect(await gateway.metrics.registry.getSingleMetricAsString("llmgw_gateway_upstream_retries_total")).not.toMatch(/model="chat"/);
  });

  it("selects a llama.cpp adapter the way llama-server takes it, by number in the request", async () => {
    const engine = await simEngine("llamacpp", ["--model", "/weights/base.gguf", "--port", "0", "--alias", "base", "--lora", "/adapters/legal.gguf", "--lora", "/adapters/medical.gguf", "--lora-init-without-apply"]);
    const { gateway, url } = await gatewayApp(openPolicy);
    gateway.swap(
      table([
        model("base", [{ id: "r1", endpoint: engine.url }], {
          engine: "llamacpp",
          adapters: [
            { name: "legal", index: 0, scale: null },
            { name: "medical", index: 1, scale: 0.5 },
          ],
        }),
      ]),
    );
    const { data, response } = await client(url).chat.completions.create({ model: "medical", messages: [{ role: "user", content: "Hi" }], max_tokens: 8 }).withResponse();
    expect(data.choices[0]?.message.content).toContain("medical");
    expect(response.headers.get("x-llmgw-model")).toBe("medical");
  });

  it("finishes a stream in flight when it closes, and answers a queued request 503 at once", async () => {
    const engine = await simEngine("vllm", ["serve", "/weights", "--port", "0", "--served-model-name", "slow"], { LLMGW_SIM_SPEED: "0.05" });
    const { gateway, app, url } = await gatewayApp(openPolicy);
    gateway.swap(table([model("slow", [{ id: "r1", endpoint: engine.url }]), model("cold", [])]));
    const stream = await client(url).chat.completions.create({ model: "slow", messages: [{ role: "user", content: "Hi" }], max_tokens: 20, stream: true, ...({ ignore_eos: true } as Record<string, unknown>) });
    const queued = fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "cold", messages: [] }) });
    while (gateway.state.waiting("cold") === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    const closing = app.close();
    const refused = await queued;
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("gateway_shutting_down");
    let text = "";
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? "";
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(finish).toBeTruthy();
    expect(text.length).toBeGreaterThan(0);
    await closing;
  });

  it("never passes on a provider's refusal of its key, which may quote part of it; a fallback answers instead", async () => {
    const provider = createServer((_request, response) => {
      response.writeHead(401, { "content-type": "application/json" });
      response.end(JSON.stringify({ error: { message: "Incorrect API key provided: sk-live-****wxyz", type: "invalid_request_error", code: "invalid_api_key" } }));
    });
    await new Promise<void>((resolve) => provider.listen(0, "127.0.0.1", resolve));
    started.push({ close: () => new Promise<void>((resolve) => provider.close(() => resolve())) });
    const providerUrl = `http://127.0.0.1:${(provider.address() as AddressInfo).port}/v1`;
    const engine = await simEngine("vllm", ["serve", "/weights", "--port", "0", "--served-model-name", "local"]);
    const { gateway, url } = await gatewayApp(openPolicy, { environment: { PROVIDER_KEY: "sk-live-secret-wxyz" } });
    const external = (fallbacks: string[]) => model("hosted", [], { engine: null, external: { base_url: providerUrl, api_key_env: "PROVIDER_KEY", model: null }, fallbacks });
    gateway.swap(table([external([]), model("local", [{ id: "r1", endpoint: engine.url }])]));
    const refused = await fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "hosted", messages: [{ role: "user", content: "Hi" }] }) });
    const text = await refused.text();
    expect(refused.status).toBe(502);
    expect(text).toContain("PROVIDER_KEY");
    expect(text).not.toContain("wxyz");
    gateway.swap(table([external(["local"]), model("local", [{ id: "r1", endpoint: engine.url }])]));
    const { response } = await client(url).chat.completions.create({ model: "hosted", messages: [{ role: "user", content: "Hi" }], max_tokens: 2 }).withResponse();
    expect(response.headers.get("x-llmgw-model")).toBe("local");
  });
});
