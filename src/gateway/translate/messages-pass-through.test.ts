import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import Fastify from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { Gateway } from "../request/gateway.js";
import { gatewayServerFactory } from "../front/gateway-server-factory.js";
import { openPolicy } from "../policy/open-policy.js";
import { registerGatewayRoutes } from "../front/register-gateway-routes.js";
import { routingModel } from "../testing/routing-model.js";

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

const named = (type: string, payload: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...payload })}\n\n`;
const anthropicStream =
  named("message_start", { message: { id: "msg_e", type: "message", role: "assistant", model: "m", content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 31, output_tokens: 0 } } }) +
  named("content_block_start", { index: 0, content_block: { type: "text", text: "" } }) +
  named("content_block_delta", { index: 0, delta: { type: "text_delta", text: "Hi" } }) +
  named("content_block_stop", { index: 0 }) +
  named("message_delta", { delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 9 } }) +
  named("message_stop", {});
const chatAnswer = { id: "chatcmpl-1", object: "chat.completion", created: 1, model: "m", choices: [{ index: 0, message: { role: "assistant", content: "Hi" }, finish_reason: "stop" }], usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 } };

/** An engine that serves both routes and writes down which one each request came to; a body with "refuse" is refused in vLLM's OpenAI shape. */
async function engine(): Promise<{ url: string; paths: string[] }> {
  const paths: string[] = [];
  const server: Server = createServer((request, response) => {
    let body = "";
    request.on("data", (part: Buffer) => (body += part.toString()));
    request.on("end", () => {
      paths.push(request.url ?? "");
      if (body.includes("refuse")) {
        response.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ object: "error", message: "max_tokens is too large", type: "BadRequestError", code: 400 }));
      } else if (request.url === "/v1/messages") {
        response.writeHead(200, { "content-type": "text/event-stream" }).end(anthropicStream);
      } else {
        response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(chatAnswer));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(() => new Promise((resolve) => server.close(resolve)));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, paths };
}

/** A gateway whose models all reach the one engine: `native` through a replica that serves /v1/messages, `builtin` through one that does not, `guarded` native with `builtin` as its fallback. */
async function gateway(endpoint: string): Promise<{ url: string; gateway: Gateway }> {
  const served = new Gateway({ policy: openPolicy, reportDemand: () => undefined, environment: {}, log: { warn: () => undefined } });
  const replica = (id: string, native: boolean) => ({ id, node: "a", endpoint, state: "ready" as const, ...(native ? { serves_messages: true } : {}) });
  served.swap({
    revision: 1,
    aliases: {},
    models: [
      routingModel("native", { replicas: [replica("r1", true)] }),
      routingModel("builtin", { engine: "llamacpp", replicas: [replica("r2", false)] }),
      routingModel("guarded", { replicas: [replica("r3", true)], fallbacks: ["builtin"] }),
    ],
  });
  const app = Fastify({ logger: false, serverFactory: gatewayServerFactory(served, { warn: () => undefined }) });
  registerGatewayRoutes(app, served);
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  closers.push(() => app.close());
  return { url, gateway: served };
}

const ask = (url: string, model: string, extra: Record<string, unknown> = {}) =>
  fetch(`${url}/v1/messages`, { method: "POST", headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" }, body: JSON.stringify({ model, max_tokens: 16, messages: [{ role: "user", content: "hi" }], ...extra }) });

describe("Anthropic's Messages passed through or translated, per replica", () => {
  it("passes a stream through as the engine wrote it to a replica that serves the API, counting its usage from message_start and message_delta", async () => {
    const upstream = await engine();
    const { url, gateway: served } = await gateway(upstream.url);
    const answer = await ask(url, "native", { stream: true });
    expect(answer.status).toBe(200);
    expect(await answer.text()).toBe(anthropicStream);
    expect(upstream.paths).toEqual(["/v1/messages"]);
    const metrics = await served.metrics.registry.metrics();
    expect(metrics).toContain('llmgw_gateway_tokens_total{model="native",direction="in"} 31');
    expect(metrics).toContain('llmgw_gateway_tokens_total{model="native",direction="out"} 9');
    expect(metrics).toContain('llmgw_gateway_api_mode_requests_total{api="messages",mode="native"} 1');
  });

  it("translates for a replica that does not serve it, and for a model whose fallback would need the translation", async () => {
    const upstream = await engine();
    const { url } = await gateway(upstream.url);
    for (const model of ["builtin", "guarded"]) {
      const answer = await ask(url, model);
      expect(answer.status).toBe(200);
      expect(await answer.json()).toMatchObject({ type: "message", content: [{ type: "text", text: "Hi" }], usage: { input_tokens: 5, output_tokens: 1 } });
    }
    expect(upstream.paths).toEqual(["/v1/chat/completions", "/v1/chat/completions"]);
  });

  it("gives an engine's OpenAI-shaped refusal on the passed-through route in Anthropic's error shape", async () => {
    const upstream = await engine();
    const { url } = await gateway(upstream.url);
    const answer = await ask(url, "native", { metadata: { user_id: "refuse" } });
    expect(upstream.paths).toEqual(["/v1/messages"]);
    expect(answer.status).toBe(400);
    const body = (await answer.json()) as { type: string; error: { type: string; message: string } };
    expect(body.type).toBe("error");
    expect(body.error.type).toBe("invalid_request_error");
    expect(body.error.message).toContain("max_tokens is too large");
  });
});
