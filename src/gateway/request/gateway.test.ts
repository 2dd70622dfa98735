import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import Fastify, { type FastifyInstance } from "fastify";
import OpenAI, { APIError } from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { startSimEngine, type SimEngineHandle } from "../../engines/sim/sim-engine.js";
import type { RoutingModel, RoutingTable } from "../../protocol/routing-table.js";
import { closedPolicy } from "../policy/closed-policy.js";
import { Gateway } from "./gateway.js";
import { GatewayRefusal, type GatewayPolicy, type UsageRecord } from "../policy/gateway-policy.js";
import { openPolicy } from "../policy/open-policy.js";
import { registerGatewayRoutes } from "../front/register-gateway-routes.js";
import { gatewayServerFactory } from "../front/gateway-server-factory.js";
import { routingModel } from "../testing/routing-model.js";
import { closeServer, listenOnLoopback } from "../../../test/support/loopback-server.js";
import { waitFor } from "../../../test/support/fake-engine.js";

const replicaKey = "llmgw_replica_test-key-0123456789abcdef";

const started: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const item of started.splice(0).reverse()) await item.close().catch(() => undefined);
});

async function simEngine(engine: "vllm" | "llamacpp" | "sglang" | "trtllm", argv: string[], environment: Record<string, string> = {}): Promise<SimEngineHandle> {
  const handle = await startSimEngine({ engine, argv, environment: { VLLM_API_KEY: replicaKey, LLAMA_API_KEY: replicaKey, ...environment }, log: () => undefined });
  started.push(handle);
  return handle;
}

function model(name: string, replicas: { id: string; endpoint: string }[], extra: Partial<RoutingModel> = {}): RoutingModel {
  return routingModel(name, { replicas: replicas.map((replica) => ({ ...replica, node: "node-1", state: "ready" as const, api_key: replicaKey })), ...extra });
}

let revision = 1;
const table = (models: RoutingModel[]): RoutingTable => ({ revision: revision++, models, aliases: {} });

async function gatewayApp(
  policy: GatewayPolicy,
  options: { maxQueuePerModel?: number; demand?: string[]; environment?: Record<string, string>; random?: () => number } = {},
): Promise<{ gateway: Gateway; app: FastifyInstance; url: string }> {
  const gateway = new Gateway({
    policy,
    reportDemand: (name) => options.demand?.push(name),
    environment: options.environment ?? {},
    log: { warn: () => undefined },
    ...(options.maxQueuePerModel !== undefined ? { maxQueuePerModel: options.maxQueuePerModel } : {}),
    ...(options.random !== undefined ? { random: options.random } : {}),
  });
  const app = Fastify({ logger: false, serverFactory: gatewayServerFactory(gateway, { warn: () => undefined }) });
  registerGatewayRoutes(app, gateway);
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  started.push({ close: () => app.close() });
  return { gateway, app, url };
}

const client = (url: string, timeout = 30_000) => new OpenAI({ baseURL: `${url}/v1`, apiKey: "client-key", maxRetries: 0, timeout });

/** A model's count in one of the gateway's counters, as /metrics shows it; 0 when it has none. */
async function counted(gateway: Gateway, metric: string, model: string): Promise<number> {
  const text = await gateway.metrics.registry.getSingleMetricAsString(metric);
  const line = text.split("\n").find((entry) => entry.startsWith(`${metric}{model="${model}"}`));
  return line === undefined ? 0 : Number(line.split(" ").at(-1));
}

describe("the gateway's request path", () => {
  it("presents the replica's key to the engine, never the client's", async () => {
    const engine = await simEngine("vllm", ["serve", "/weights", "--port", "0", "--served-model-name", "chat"]);
    const { gateway, url } = await gatewayApp(openPolicy);
    gateway.swap(table([model("chat", [{ id: "r1", endpoint: engine.url }])]));
    const answer = await client(url).chat.completions.create({ model: "chat", messages: [{ role: "user", content: "Hi" }], max_tokens: 3 });
    // The simulated engine's first three tokens, whatever the seed.
    expect(answer.choices[0]?.message.content).toBe("Simulated answer from");
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
    await waitFor(() => gateway.state.waiting("cold") > 0, 10_000, "the request for cold to queue", 5);
    expect(demand).toContain("cold");
    const refused = await fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "cold", messages: [{ role: "user", content: "Hi" }] }) });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(((await refused.json()) as { error: { code: string; type: string } }).error).toMatchObject({ code: "queue_full", type: "rate_limit_error" });
    gateway.swap(table([model("cold", [{ id: "r1", endpoint: engine.url }])]));
    expect((await queued).choices[0]?.message.content).toBe("Simulated answer from");
  });

  it("answers 503 at once, with placement's reason in OpenAI's shape, for a model no replica will come to", async () => {
    const { gateway, url } = await gatewayApp(openPolicy);
    gateway.swap(table([model("huge", [], { on_demand: true, queue_timeout_ms: 120_000, unavailable: "placement cannot place huge: no node has 4 free h100 cards" })]));
    const refused = await client(url).chat.completions.create({ model: "huge", messages: [{ role: "user", content: "Hi" }] }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(APIError);
    const error = refused as APIError;
    expect(error.status).toBe(503);
    expect(error.error).toMatchObject({ code: "model_unavailable", type: "server_error", message: expect.stringContaining("no node has 4 free h100 cards") });
    expect(gateway.state.waiting("huge")).toBe(0);
  });

  it("answers a request already waiting with placement's reason as soon as the table brings the refusal, not at the deadline", async () => {
    const { gateway, url } = await gatewayApp(openPolicy);
    gateway.swap(table([model("burst", [], { on_demand: true, queue_timeout_ms: 120_000 })]));
    // The client gives up long before the model's 120 s: only an answer at the refusal arrives in time.
    const waiting = client(url, 20_000).chat.completions.create({ model: "burst", messages: [{ role: "user", content: "Hi" }] }).catch((error: unknown) => error);
    await waitFor(() => gateway.state.waiting("burst") > 0, 10_000, "the request for burst to queue", 5);
    gateway.swap(table([model("burst", [], { on_demand: true, queue_timeout_ms: 120_000, unavailable: "placement cannot place burst: 0 of 2 nodes: 2 have no free h100" })]));
    const refused = await waiting;
    expect(refused).toBeInstanceOf(APIError);
    expect({ status: (refused as APIError).status, code: (refused as APIError).code }).toEqual({ status: 503, code: "model_unavailable" });
    expect((refused as APIError).message).toContain("model burst has no replica and none will start: placement cannot place burst: 0 of 2 nodes: 2 have no free h100");
    expect(gateway.state.waiting("burst")).toBe(0);
  });

  it("tells a request that waited in vain for a loading model to retry after the table's estimate", async () => {
    const { gateway, url } = await gatewayApp(openPolicy);
    gateway.swap(table([model("slow", [], { on_demand: true, queue_timeout_ms: 1_000, loading_eta_s: 75 })]));
    const refused = await fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "slow", messages: [{ role: "user", content: "Hi" }] }) });
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("75");
    expect(((await refused.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: "model_loading", message: expect.stringContaining("about 75 s") });
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
      record: (usage) => void records.push(usage),
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

  it("counts each answer into the model's series: requests, errors, latency, time to first token of a stream, tokens", async () => {
    const engine = await simEngine("vllm", ["serve", "/weights", "--port", "0", "--served-model-name", "chat"]);
    const broken = await simEngine("vllm", ["serve", "/weights", "--port", "0", "--served-model-name", "chat"], { LLMGW_SIM_FAULT: "error-500" });
    const { gateway, url } = await gatewayApp(openPolicy);
    gateway.swap(table([model("chat", [{ id: "r1", endpoint: engine.url }]), model("flaky", [{ id: "r2", endpoint: broken.url }])]));
    const stream = await client(url).chat.completions.create({ model: "chat", messages: [{ role: "user", content: "Hi there" }], max_tokens: 5, stream: true, stream_options: { include_usage: true } });
    let completionTokens = 0;
    for await (const chunk of stream) completionTokens = chunk.usage?.completion_tokens ?? completionTokens;
    await client(url).chat.completions.create({ model: "flaky", messages: [{ role: "user", content: "Hi" }] }).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 20));

    const chat = gateway.series.points("chat").filter((point) => point.requests_per_s > 0);
    expect(chat).toHaveLength(1);
    expect(chat[0]).toMatchObject({ requests_per_s: 0.1, errors_per_s: 0, tokens_per_s: completionTokens / 10 });
    expect(completionTokens).toBeGreaterThan(0);
    expect(chat[0]?.ttft_p50_ms).toBeGreaterThan(0);
    expect(chat[0]?.latency_p95_ms).toBeGreaterThanOrEqual(chat[0]?.ttft_p50_ms ?? Infinity);
    const flaky = gateway.series.points("flaky").filter((point) => point.requests_per_s > 0);
    expect(flaky.map((point) => [point.requests_per_s, point.errors_per_s, point.ttft_p50_ms])).toEqual([[0.1, 0.1, null]]);
    // The whole gateway's series sums both.
    expect(gateway.series.points().reduce((sum, point) => sum + point.requests_per_s * 10, 0)).toBe(2);
  });

  it("refuses every /v1 request 401 in OpenAI's shape when keys are required and none is valid", async () => {
    const { url } = await gatewayApp(closedPolicy);
    const error = await client(url).models.list().catch((caught: unknown) => caught);
    expect((error as APIError).status).toBe(401);
    expect((error as APIError).code).toBe("invalid_api_key");
  });

  it("refuses what OpenAI's API requires before any engine sees it, in OpenAI's shape naming the param", async () => {
    const engine = await simEngine("vllm", ["serve", "/weights", "--port", "0", "--served-model-name", "chat"]);
    const { gateway, url } = await gatewayApp(openPolicy);
    gateway.swap(table([model("chat", [{ id: "r1", endpoint: engine.url }])]));
    const cases: [string, Record<string, unknown>, string][] = [
      ["chat/completions", { model: "chat" }, "messages"],
      ["chat/completions", { model: "chat", messages: [] }, "messages"],
      ["chat/completions", { model: "chat", messages: [{ role: "user", content: "Hi" }], max_tokens: 0 }, "max_tokens"],
      ["chat/completions", { model: "chat", messages: [{ role: "user", content: "Hi" }], max_completion_tokens: 0 }, "max_completion_tokens"],
      ["completions", { model: "chat" }, "prompt"],
      ["embeddings", { model: "chat" }, "input"],
    ];
    for (const [route, body, param] of cases) {
      const refused = await client(url).post(`/${route}`, { body }).then(() => undefined, (error: unknown) => error);
      expect(refused).toBeInstanceOf(APIError);
      const error = refused as APIError;
      expect({ route, param, status: error.status, code: error.code, param_given: error.param, type: error.type }).toEqual({ route, param, status: 400, code: "invalid_input", param_given: param, type: "invalid_request_error" });
    }
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
    const queued = fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "cold", messages: [{ role: "user", content: "Hi" }] }) });
    await waitFor(() => gateway.state.waiting("cold") > 0, 10_000, "the request for cold to queue", 5);
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
    // The stream whole, as the engine wrote it: a first line naming the model and echoing the prompt, and all
    // twenty tokens ignore_eos asked for (one word each).
    expect(text).toMatch(/^Simulated answer from slow: Hi\n\n/);
    expect(text.split(/\s+/)).toHaveLength(20);
    expect(finish).toBe("length");
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

describe("a replica whose engine is gone", () => {
  // With random at 0 the choice between two idle replicas always falls on the first listed: here, the one under test.
  const first = () => 0;
  const ask = (url: string) => client(url).chat.completions.create({ model: "chat", messages: [{ role: "user", content: "Hi" }], max_tokens: 2 });

  it("gets one attempt after its engine stops listening, not every request's first, and every request is answered", async () => {
    const engine = await simEngine("vllm", ["serve", "/weights", "--port", "0", "--served-model-name", "chat"]);
    // An engine that was killed: its port refuses connections while the routing table still lists it as ready.
    const killed = createServer((_request, response) => response.end());
    const killedUrl = await listenOnLoopback(killed);
    await closeServer(killed);
    const { gateway, url } = await gatewayApp(openPolicy, { random: first });
    gateway.swap(table([model("chat", [{ id: "killed", endpoint: killedUrl }, { id: "alive", endpoint: engine.url }])]));
    for (let request = 0; request < 12; request += 1) {
      const { data, response } = await ask(url).withResponse();
      expect(data.choices[0]?.message.content).toBe("Simulated answer");
      expect(response.headers.get("x-llmgw-model")).toBe("chat");
    }
    // Each attempt the killed replica got was refused and retried on the other: one, not twelve.
    expect(await counted(gateway, "llmgw_gateway_upstream_retries_total", "chat")).toBe(1);
    expect(await counted(gateway, "llmgw_gateway_endpoint_ejections_total", "chat")).toBe(1);
  });

  it("is still tried while ejected when it is the model's only replica, and answers once its engine listens again", async () => {
    const killed = createServer((_request, response) => response.end());
    const killedUrl = await listenOnLoopback(killed);
    await closeServer(killed);
    const { gateway, url } = await gatewayApp(openPolicy, { random: first });
    gateway.swap(table([model("chat", [{ id: "r1", endpoint: killedUrl }])]));
    const error = await ask(url).catch((caught: unknown) => caught);
    expect((error as APIError).status).toBe(502);
    expect((error as APIError).code).toBe("upstream_failed");
    expect(await counted(gateway, "llmgw_gateway_endpoint_ejections_total", "chat")).toBe(1);
    // The engine starts again on the same port, well within the ejection: the next request reaches it.
    await simEngine("vllm", ["serve", "/weights", "--port", new URL(killedUrl).port, "--served-model-name", "chat"]);
    expect((await ask(url)).choices[0]?.message.content).toBe("Simulated answer");
  });

  it("retries a stream whose engine died inside its first event: the client gets the other replica's stream whole", async () => {
    const engine = await simEngine("vllm", ["serve", "/weights", "--port", "0", "--served-model-name", "chat"]);
    // An engine killed while writing its first event: the stream's head and half an event, then the socket is gone.
    const dying = createServer((request, response) => {
      request.resume();
      request.on("end", () => {
        response.writeHead(200, { "content-type": "text/event-stream" });
        response.write('data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"del', () => response.socket?.destroy());
      });
    });
    const dyingUrl = await listenOnLoopback(dying);
    started.push({ close: () => closeServer(dying) });
    const { gateway, url } = await gatewayApp(openPolicy, { random: first });
    gateway.swap(table([model("chat", [{ id: "dying", endpoint: dyingUrl }, { id: "alive", endpoint: engine.url }])]));
    const stream = await client(url).chat.completions.create({ model: "chat", messages: [{ role: "user", content: "Hi" }], max_tokens: 4, stream: true });
    let text = "";
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? "";
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    // The alive replica's stream whole: its first four tokens, cut by max_tokens.
    expect(text).toBe("Simulated answer from chat:");
    expect(finish).toBe("length");
    expect(await counted(gateway, "llmgw_gateway_upstream_retries_total", "chat")).toBe(1);
  });

  it("is never ejected for answering 503: an engine that answers is up, and gets its turn on every request", async () => {
    const engine = await simEngine("vllm", ["serve", "/weights", "--port", "0", "--served-model-name", "chat"]);
    let overloadedGot = 0;
    const overloaded = createServer((_request, response) => {
      overloadedGot += 1;
      response.writeHead(503, { "content-type": "application/json" });
      response.end(JSON.stringify({ error: { message: "overloaded", type: "server_error", code: null } }));
    });
    const overloadedUrl = await listenOnLoopback(overloaded);
    started.push({ close: () => closeServer(overloaded) });
    const { gateway, url } = await gatewayApp(openPolicy, { random: first });
    gateway.swap(table([model("chat", [{ id: "overloaded", endpoint: overloadedUrl }, { id: "alive", endpoint: engine.url }])]));
    for (let request = 0; request < 6; request += 1) expect((await ask(url)).choices[0]?.message.content).toBe("Simulated answer");
    expect(overloadedGot).toBe(6);
    expect(await counted(gateway, "llmgw_gateway_endpoint_ejections_total", "chat")).toBe(0);
  });
});

describe("OpenAI's newer routes through the gateway", () => {
  const vllmArgv = (name: string) => ["serve", "/weights", "--port", "0", "--served-model-name", name];

  it("serves POST /v1/responses to the official client, streamed and not, with usage counted", async () => {
    const engine = await simEngine("vllm", vllmArgv("chat"));
    const records: UsageRecord[] = [];
    const { gateway, url } = await gatewayApp({ ...openPolicy, record: (usage) => void records.push(usage) });
    gateway.swap(table([model("chat", [{ id: "r1", endpoint: engine.url }])]));
    const whole = await client(url).responses.create({ model: "chat", input: "Explain how tides work", instructions: "Be clear.", max_output_tokens: 40 });
    expect(whole.object).toBe("response");
    expect(whole.output_text.split("\n\n")[0]).toBe("Simulated answer from chat: Explain how tides work");
    // An open question is answered at length: 40 tokens cut it short, as OpenAI says it.
    expect(whole.status).toBe("incomplete");
    expect(whole.incomplete_details?.reason).toBe("max_output_tokens");
    expect(whole.usage?.output_tokens).toBe(40);
    expect(records.at(-1)).toMatchObject({ model: "chat", completionTokens: 40, error: false });

    const short = { model: "chat", input: [{ role: "user" as const, content: "What is the capital of Norway?" }] };
    const answer = await client(url).responses.create(short);
    expect(answer.status).toBe("completed");
    let streamed = "";
    const types: string[] = [];
    for await (const event of await client(url).responses.create({ ...short, stream: true })) {
      types.push(event.type);
      if (event.type === "response.output_text.delta") streamed += event.delta;
      if (event.type === "response.completed") expect(event.response.usage?.output_tokens).toBe(answer.usage?.output_tokens);
    }
    expect(streamed).toBe(answer.output_text);
    expect(types[0]).toBe("response.created");
    expect(types.at(-1)).toBe("response.completed");
  });

  it("answers a forced function call and JSON text through /v1/responses", async () => {
    const engine = await simEngine("vllm", vllmArgv("chat"));
    const { gateway, url } = await gatewayApp(openPolicy);
    gateway.swap(table([model("chat", [{ id: "r1", endpoint: engine.url }])]));
    const tools = [{ type: "function" as const, name: "lookup", strict: false, parameters: { type: "object", properties: { term: { type: "string" } } } }];
    const called = await client(url).responses.create({ model: "chat", input: "Look up llamas", tools, tool_choice: "required" });
    const call = called.output[0];
    expect(call?.type).toBe("function_call");
    expect(call?.type === "function_call" ? JSON.parse(call.arguments) : undefined).toEqual({ term: expect.any(String) });
    const json = await client(url).responses.create({ model: "chat", input: "A llama, as JSON", text: { format: { type: "json_object" } } });
    expect(JSON.parse(json.output_text)).toEqual({ answer: expect.stringContaining("Simulated answer from chat") });
  });

  it("routes /v1/rerank and /v1/score to a reranker on vLLM, the most relevant document first", async () => {
    const engine = await simEngine("vllm", vllmArgv("reranker"));
    const { gateway, url } = await gatewayApp(openPolicy);
    gateway.swap(table([model("reranker", [{ id: "r1", endpoint: engine.url }])]));
    const documents = ["The giant panda is a bear native to China.", "Bread needs flour, water and salt.", "hi"];
    const ranked = await client(url).post<{ results: { index: number; relevance_score: number; document: { text: string } }[] }>("/rerank", {
      body: { model: "reranker", query: "What is a giant panda?", documents, top_n: 2 },
    });
    expect(ranked.results).toHaveLength(2);
    expect(ranked.results[0]).toMatchObject({ index: 0, document: { text: documents[0] } });
    expect(ranked.results[0]?.relevance_score).toBeGreaterThan(ranked.results[1]?.relevance_score ?? 1);
    const scores = await client(url).post<{ object: string; data: { index: number; score: number }[] }>("/score", {
      body: { model: "reranker", text_1: "giant panda", text_2: documents },
    });
    expect(scores.object).toBe("list");
    expect(scores.data.map((entry) => entry.index)).toEqual([0, 1, 2]);
    expect(Math.max(...scores.data.map((entry) => entry.score))).toBe(scores.data[0]?.score);
  });

  it("refuses chat, completions and Responses to a model that pools, naming the routes it serves, and serves its rerank", async () => {
    const engine = await simEngine("vllm", [...vllmArgv("reranker"), "--runner", "pooling"]);
    const { gateway, url } = await gatewayApp(openPolicy);
    const pooling = { flag: "--runner pooling", routes: ["embeddings", "rerank", "score"] };
    gateway.swap(table([model("reranker", [{ id: "r1", endpoint: engine.url }], { pooling }), model("chat", [], { fallbacks: ["reranker"], unavailable: "chat is kept unplaced on purpose" })]));
    const refusals = await Promise.all([
      client(url).chat.completions.create({ model: "reranker", messages: [{ role: "user", content: "Hi" }] }),
      client(url).completions.create({ model: "reranker", prompt: "Hi" }),
      client(url).responses.create({ model: "reranker", input: "Hi" }),
    ].map((request) => request.catch((error: unknown) => error)));
    for (const [index, refused] of refusals.entries()) {
      expect(refused, String(index)).toBeInstanceOf(APIError);
      expect({ status: (refused as APIError).status, code: (refused as APIError).code }).toEqual({ status: 400, code: "wrong_model_task" });
      expect((refused as APIError).message).toContain("model reranker pools rather than generates (its engine runs with --runner pooling): it serves /v1/embeddings, /v1/rerank or /v1/score");
    }
    expect((refusals[1] as APIError).message).toContain("not POST /v1/completions");
    const ranked = await client(url).post<{ results: { index: number }[] }>("/rerank", { body: { model: "reranker", query: "panda", documents: ["a panda", "bread"] } });
    expect(ranked.results[0]?.index).toBe(0);
    // Nor is it a chat model's fallback: the chat request is answered with the chat model's own reason.
    const unanswered = await client(url).chat.completions.create({ model: "chat", messages: [{ role: "user", content: "Hi" }] }).catch((error: unknown) => error);
    expect({ status: (unanswered as APIError).status, code: (unanswered as APIError).code }).toEqual({ status: 503, code: "model_unavailable" });
  });

  it("refuses a route the model's engine does not serve, naming the engines that do, and translates a Responses request instead", async () => {
    const llama = await simEngine("llamacpp", ["--model", "/w.gguf", "--port", "0", "--alias", "small"]);
    const trt = await simEngine("trtllm", ["/engine", "--port", "0", "--served_model_name", "fast"]);
    const { gateway, url } = await gatewayApp(openPolicy);
    gateway.swap(table([model("small", [{ id: "r1", endpoint: llama.url }], { engine: "llamacpp" }), model("fast", [{ id: "r2", endpoint: trt.url }], { engine: "trtllm" })]));
    // llama-server serves no /v1/responses: the gateway asks it for a chat completion and answers in the Responses API's shape.
    const translated = await client(url).responses.create({ model: "small", input: "Hi" });
    expect(translated.object).toBe("response");
    expect(translated.output_text.length).toBeGreaterThan(0);
    const rerank = await client(url).post("/rerank", { body: { model: "fast", query: "q", documents: ["d"] } }).catch((error: unknown) => error);
    expect((rerank as APIError).code).toBe("wrong_model_task");
    expect((rerank as APIError).message).toContain("trtllm, which does not serve POST /v1/rerank");
    expect((rerank as APIError).message).toContain("vllm, sglang, llamacpp");
    // llama-server does rerank, and answers in its own shape.
    const served = await client(url).post<{ results: { index: number; relevance_score: number }[] }>("/rerank", { body: { model: "small", query: "q", documents: ["q", "x"] } });
    expect(served.results.map((result) => result.index)).toEqual([0, 1]);
    const badBody = await client(url).post("/score", { body: { model: "small", text_1: "a" } }).catch((error: unknown) => error);
    expect({ status: (badBody as APIError).status, param: (badBody as APIError).param }).toEqual({ status: 400, param: "text_2" });
  });

  it("names max_tokens, not messages, when the answer asked for is what does not fit", async () => {
    const engine = await simEngine("vllm", vllmArgv("chat"));
    const { gateway, url } = await gatewayApp(openPolicy);
    gateway.swap(table([model("chat", [{ id: "r1", endpoint: engine.url }], { context: 100, max_output: 50 })]));
    const cases: [() => Promise<unknown>, string][] = [
      [() => client(url).chat.completions.create({ model: "chat", messages: [{ role: "user", content: "Hi" }], max_tokens: 60 }), "max_tokens"],
      [() => client(url).chat.completions.create({ model: "chat", messages: [{ role: "user", content: "Hi" }], max_completion_tokens: 60 }), "max_completion_tokens"],
      [() => client(url).chat.completions.create({ model: "chat", messages: [{ role: "user", content: "word ".repeat(60) }], max_tokens: 40 }), "max_tokens"],
      [() => client(url).chat.completions.create({ model: "chat", messages: [{ role: "user", content: "word ".repeat(100) }], max_tokens: 10 }), "messages"],
      [() => client(url).responses.create({ model: "chat", input: "Hi", max_output_tokens: 60 }), "max_output_tokens"],
    ];
    // Translated for an engine without /v1/responses, the refusal still names the Responses API's fields.
    const llama = await simEngine("llamacpp", ["--model", "/w.gguf", "--port", "0", "--alias", "small"]);
    gateway.swap(table([model("chat", [{ id: "r1", endpoint: engine.url }], { context: 100, max_output: 50 }), model("small", [{ id: "r2", endpoint: llama.url }], { engine: "llamacpp", context: 100, max_output: 50 })]));
    cases.push([() => client(url).responses.create({ model: "small", input: "Hi", max_output_tokens: 60 }), "max_output_tokens"]);
    cases.push([() => client(url).responses.create({ model: "small", input: "word ".repeat(100), max_output_tokens: 10 }), "input"]);
    for (const [request, param] of cases) {
      const refused = (await request().catch((error: unknown) => error)) as APIError;
      expect({ param, status: refused.status, code: refused.code, given: refused.param }).toEqual({ param, status: 400, code: "context_length_exceeded", given: param });
    }
  });
});
