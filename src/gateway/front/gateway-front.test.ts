import { createServer, get } from "node:http";
import type { AddressInfo } from "node:net";
import Fastify from "fastify";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import type { RoutingModel } from "../../protocol/routing-table.js";
import { Gateway } from "../request/gateway.js";
import { gatewayServerFactory } from "./gateway-server-factory.js";
import { RawClient, type RawAnswer } from "../testing/raw-client.js";
import { openPolicy } from "../policy/open-policy.js";
import { registerGatewayRoutes } from "./register-gateway-routes.js";
import { routingModel } from "../testing/routing-model.js";
import { defaultServerLimits } from "../../catalog/server-limits.js";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

/** A provider that echoes what it was sent: the model, the body's length, and whether it was asked to stream. */
async function echoProvider(): Promise<string> {
  const server = createServer((request, response) => {
    const parts: Buffer[] = [];
    request.on("data", (part: Buffer) => parts.push(part));
    request.on("end", () => {
      const body = JSON.parse(Buffer.concat(parts).toString()) as { model: string; stream?: boolean; messages?: { content: string }[] };
      const content = `echo ${body.messages?.[0]?.content ?? ""}`;
      if (body.stream) {
        response.writeHead(200, { "content-type": "text/event-stream" });
        response.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content } }] })}\n\n`);
        response.end("data: [DONE]\n\n");
        return;
      }
      const text = JSON.stringify({ id: "x", object: "chat.completion", created: 1, model: body.model, choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } });
      response.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) }).end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
}

const echoModel = (baseUrl: string): RoutingModel => routingModel("echo", { engine: null, external: { base_url: baseUrl, api_key_env: null, model: null } });

async function gatewayServer(options: { keepAliveTimeout?: number; headersTimeout?: number } = {}): Promise<{ port: number; url: string; close: () => Promise<void> }> {
  const gateway = new Gateway({ policy: openPolicy, reportDemand: () => undefined, environment: {}, log: { warn: () => undefined } });
  gateway.swap({ revision: 1, models: [echoModel(await echoProvider())], aliases: {} });
  const limits = { ...defaultServerLimits, ...(options.keepAliveTimeout ? { idleTimeoutMs: options.keepAliveTimeout } : {}), ...(options.headersTimeout ? { headerTimeoutMs: options.headersTimeout } : {}) };
  const app = Fastify({ logger: false, serverFactory: gatewayServerFactory(gateway, { warn: () => undefined }, undefined, limits) });
  registerGatewayRoutes(app, gateway);
  app.get("/health", async () => ({ ok: true }));
  app.post("/echo-admin", async (request) => ({ got: request.body }));
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  const close = () => app.close();
  closers.push(close);
  return { port: (app.server.address() as AddressInfo).port, url, close };
}

const chat = (content: string, extraHeaders = "", stream = false) => {
  const body = JSON.stringify({ model: "echo", messages: [{ role: "user", content }], ...(stream ? { stream: true } : {}) });
  return `POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${extraHeaders}\r\n${body}`;
};

const contentOf = (answer: RawAnswer) => (JSON.parse(answer.body) as { choices: { message: { content: string } }[] }).choices[0]?.message.content;

describe("the gateway's front", () => {
  it("answers the OpenAI client, streaming and not", async () => {
    const { url } = await gatewayServer();
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "none", maxRetries: 0 });
    const answer = await client.chat.completions.create({ model: "echo", messages: [{ role: "user", content: "hello" }] });
    expect(answer.choices[0]?.message.content).toBe("echo hello");
    const stream = await client.chat.completions.create({ model: "echo", stream: true, messages: [{ role: "user", content: "streamed" }] });
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
    expect(text).toBe("echo streamed");
  });

  it("answers requests one after another on one kept-alive connection, with a date and the request id", async () => {
    const { port } = await gatewayServer();
    const client = new RawClient(port, closers);
    for (const word of ["one", "two", "three"]) {
      client.send(chat(word, `x-request-id: id-${word}\r\n`));
      const answer = await client.next();
      expect(answer.status).toBe(200);
      expect(contentOf(answer)).toBe(`echo ${word}`);
      expect(answer.headers).toMatchObject({ "x-request-id": `id-${word}`, "x-llmgw-model": "echo", connection: "keep-alive" });
      expect(new Date(answer.headers.date as string).getTime()).toBeGreaterThan(0);
    }
  });

  it("answers pipelined requests in the order they were sent", async () => {
    const { port } = await gatewayServer();
    const client = new RawClient(port, closers);
    client.send(chat("first") + chat("second") + chat("third"));
    expect([contentOf(await client.next()), contentOf(await client.next()), contentOf(await client.next())]).toEqual(["echo first", "echo second", "echo third"]);
  });

  it("answers a pipelined OpenAI request itself and hands the request after it to node, in order", async () => {
    const { port } = await gatewayServer();
    const client = new RawClient(port, closers);
    client.send(chat("first") + "GET /v1/models HTTP/1.1\r\nhost: gw\r\n\r\n" + chat("third"));
    expect(contentOf(await client.next())).toBe("echo first");
    expect((JSON.parse((await client.next()).body) as { data: { id: string }[] }).data.map((entry) => entry.id)).toEqual(["echo"]);
    expect(contentOf(await client.next())).toBe("echo third");
  });

  it("reads a request that arrives a few bytes at a time", async () => {
    const { port } = await gatewayServer();
    const client = new RawClient(port, closers);
    const bytes = Buffer.from(chat("slowly"));
    for (let at = 0; at < bytes.length; at += 7) {
      client.send(bytes.subarray(at, at + 7));
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(contentOf(await client.next())).toBe("echo slowly");
  });

  it("hands every other request to node's server on the same connection: /v1/models, the admin API, then the OpenAI routes again", async () => {
    const { port } = await gatewayServer();
    const client = new RawClient(port, closers);
    client.send(chat("before"));
    expect(contentOf(await client.next())).toBe("echo before");
    client.send("GET /v1/models HTTP/1.1\r\nhost: gw\r\n\r\n");
    const models = await client.next();
    expect((JSON.parse(models.body) as { data: { id: string }[] }).data.map((entry) => entry.id)).toEqual(["echo"]);
    client.send("GET /health HTTP/1.1\r\nhost: gw\r\n\r\n");
    expect(JSON.parse((await client.next()).body)).toEqual({ ok: true });
    client.send(chat("after"));
    expect(contentOf(await client.next())).toBe("echo after");
  });

  it("answers the OpenAI routes itself and counts the connections it hands over", async () => {
    const { port, url } = await gatewayServer();
    // Each scrape on a connection of its own, itself handed over (GET /metrics).
    const handOffs = () =>
      new Promise<number>((resolve, reject) => {
        get(`${url}/metrics`, { agent: false }, (response) => {
          let text = "";
          response.on("data", (part: Buffer) => (text += part.toString()));
          response.on("end", () => resolve(Number(/^llmgw_gateway_front_handoffs_total (\d+)$/m.exec(text)?.[1])));
        }).on("error", reject);
      });
    expect(await handOffs()).toBe(1);
    const client = new RawClient(port, closers);
    for (const word of ["a", "b", "c"]) {
      client.send(chat(word));
      await client.next();
    }
    expect(await handOffs()).toBe(2);
    client.send("GET /v1/models HTTP/1.1\r\nhost: gw\r\n\r\n");
    await client.next();
    expect(await handOffs()).toBe(4);
  });

  it("hands over what it does not take on, and node answers it as it always did", async () => {
    const { port } = await gatewayServer();
    const body = JSON.stringify({ model: "echo", messages: [{ role: "user", content: "chunked" }] });
    // A body in chunks.
    const chunked = new RawClient(port, closers);
    chunked.send(`POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\ntransfer-encoding: chunked\r\ncontent-type: application/json\r\n\r\n${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`);
    expect(contentOf(await chunked.next())).toBe("echo chunked");
    // Expect: 100-continue, as curl sends for a larger body: node says continue, then answers.
    const expecting = new RawClient(port, closers);
    expecting.send(`POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\nexpect: 100-continue\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n`);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expecting.send(body);
    expect(contentOf(await expecting.next())).toBe("echo chunked");
    // A query string, and a trailing slash.
    for (const path of ["/v1/chat/completions?x=1", "/v1/chat/completions/"]) {
      const other = new RawClient(port, closers);
      other.send(`POST ${path} HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
      expect(contentOf(await other.next())).toBe("echo chunked");
    }
  });

  it("leaves malformed requests to node, which refuses them with 400", async () => {
    const { port } = await gatewayServer();
    for (const request of [
      "POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\n{}",
      "POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\nbad header\r\ncontent-length: 2\r\n\r\n{}",
      "POST /v1/chat/completions HTTP/1.1\r\ncontent-length: 2\r\n\r\n{}",
    ]) {
      const client = new RawClient(port, closers);
      client.send(request);
      expect((await client.next()).status).toBe(400);
    }
  });

  it("answers a client that half-closes after its request, then ends the connection", async () => {
    const { port } = await gatewayServer();
    const client = new RawClient(port, closers);
    client.socket.end(chat("and goodbye"));
    expect(contentOf(await client.next())).toBe("echo and goodbye");
    await client.closed;
  });

  it("closes an idle kept-alive connection after the server's keepAliveTimeout, and answers 408 to a head that never ends", async () => {
    const { port } = await gatewayServer({ keepAliveTimeout: 500, headersTimeout: 500 });
    const idle = new RawClient(port, closers);
    idle.send(chat("then idle"));
    const answer = await idle.next();
    expect(answer.headers["keep-alive"]).toBe("timeout=0");
    await idle.closed;
    const slow = new RawClient(port, closers);
    slow.send("POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\n");
    expect((await slow.next()).status).toBe(408);
    await slow.closed;
  });

  it("closes idle connections when the server closes, and answers 503 to a request only partly sent instead of waiting for it", async () => {
    const { port, close } = await gatewayServer();
    const idle = new RawClient(port, closers);
    idle.send(chat("idle soon"));
    await idle.next();
    const halfway = new RawClient(port, closers);
    halfway.send("POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\n");
    await new Promise((resolve) => setTimeout(resolve, 50));
    const closing = close();
    await idle.closed;
    expect((await halfway.next()).status).toBe(503);
    await halfway.closed;
    await closing;
  });
});
