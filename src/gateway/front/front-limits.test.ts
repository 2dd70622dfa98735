import { createServer, type Server } from "node:http";
import { connect, type AddressInfo } from "node:net";
import Fastify from "fastify";
import OpenAI from "openai";
import { Agent, fetch as undiciFetch } from "undici";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { Gateway } from "../request/gateway.js";
import { gatewayServerFactory } from "./gateway-server-factory.js";
import { registerGatewayRoutes } from "./register-gateway-routes.js";
import { routingModel } from "../testing/routing-model.js";
import { clientErrorAnswerer, installErrorHandling } from "../../http/error-handler.js";
import { defaultServerLimits, type ServerLimits } from "../../catalog/server-limits.js";
import type { GatewayPolicy } from "../policy/gateway-policy.js";
import { KeysPolicy } from "../policy/keys-policy.js";
import type { GatewayKey } from "../../protocol/gateway-keys-feed.js";
import { hashToken } from "../../auth/tokens.js";
import { closingExchange, RawClient } from "../testing/raw-client.js";
import { echoChatCompletion, startEchoFront } from "../testing/echo-front.js";

/**
 * The front under abuse and under the request-smuggling cases proxies are
 * tested with: each case is sent as raw bytes to the gateway and to a plain
 * node:http server, and the gateway must refuse whatever node refuses (it
 * hands those connections to node's parser), never pass such a request to an
 * engine, and keep answering normal requests meanwhile.
 */

let plain: Server;
let port: number;
let plainPort: number;
let close: () => Promise<void>;
let bodiesSeen: string[];

beforeAll(async () => {
  const front = await startEchoFront({ ...defaultServerLimits, headerTimeoutMs: 1000, requestTimeoutMs: 1500 });
  port = front.port;
  bodiesSeen = front.engineSaw;
  plain = createServer((request, response) => {
    request.resume();
    request.on("end", () => response.end("parsed"));
  });
  await new Promise<void>((resolve) => plain.listen(0, "127.0.0.1", resolve));
  plainPort = (plain.address() as AddressInfo).port;
  close = async () => {
    await front.close();
    plain.closeAllConnections();
    await new Promise<void>((resolve) => plain.close(() => resolve()));
  };
});

afterAll(async () => close?.());


const statusOf = (answer: string): number | undefined => {
  const match = /^HTTP\/1\.1 (\d{3})/.exec(answer);
  return match ? Number(match[1]) : undefined;
};

const normalRequest = () => new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: "any", maxRetries: 0 }).chat.completions.create({ model: "echo", messages: [{ role: "user", content: "still there?" }] });

const body = JSON.stringify({ model: "echo", messages: [{ role: "user", content: "smuggled" }] });
const head = "POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\n";

const smuggling: Record<string, string> = {
  "Content-Length with Transfer-Encoding": `${head}content-length: ${body.length}\r\ntransfer-encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`,
  "two different Content-Lengths": `${head}content-length: ${body.length}\r\ncontent-length: 5\r\n\r\n${body}`,
  "a Content-Length with a plus sign": `${head}content-length: +${body.length}\r\n\r\n${body}`,
  "a negative Content-Length": `${head}content-length: -1\r\n\r\n${body}`,
  "a Content-Length with a space inside": `${head}content-length: ${String(body.length).slice(0, 1)} ${String(body.length).slice(1)}\r\n\r\n${body}`,
  "obsolete line folding": `${head}x-folded: a\r\n  b\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
  "a bare LF ending a header": `${head}x-bare: lf\ncontent-length: ${body.length}\r\n\r\n${body}`,
  "a bare CR inside a header": `${head}x-bare: c\rr\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
  "a NUL in a header value": `${head}x-nul: a\u0000b\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
  "a request line over the limit": `POST /v1/chat/completions?${"a".repeat(20_000)} HTTP/1.1\r\nhost: gw\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
  "a space before the colon": `${head}content-length : ${body.length}\r\n\r\n${body}`,
  // Found by test/chaos/fast/front-differential.test.ts: node refuses a tab after the digits (a space it takes), the front once trimmed it.
  "a tab after the Content-Length": `${head}content-length: ${body.length}\t\r\n\r\n${body}`,
};

describe("request smuggling at the gateway's front", () => {
  for (const [name, bytes] of Object.entries(smuggling)) {
    it(`refuses ${name} as node's own parser does, and no engine sees it`, async () => {
      const before = bodiesSeen.length;
      const [atGateway, atNode] = await Promise.all([closingExchange(port, bytes), closingExchange(plainPort, bytes)]);
      expect(statusOf(atNode), `node's own parser on ${name}`).not.toBe(200);
      expect(statusOf(atGateway), atGateway).toBe(statusOf(atNode));
      expect(bodiesSeen.length).toBe(before);
    });
  }

  it("answers the first of pipelined requests and refuses the second whose body is cut short, passing on only the whole one", async () => {
    const before = bodiesSeen.length;
    const whole = `${head}content-length: ${body.length}\r\n\r\n${body}`;
    const cut = `${head}content-length: ${body.length + 50}\r\n\r\n${body}`;
    const answer = await closingExchange(port, whole + cut);
    expect(answer.match(/^HTTP\/1\.1 200/gm) ?? []).toHaveLength(1);
    expect(bodiesSeen.slice(before)).toEqual([body]);
  });
});

describe("slow clients", () => {
  it("closes a connection that sends a header byte every few hundred ms with a 408 in OpenAI's shape on /v1, and in the API's elsewhere, answering normal requests meanwhile", async () => {
    const trickle = (start: string): Promise<string> =>
      new Promise((resolve) => {
        const socket = connect({ host: "127.0.0.1", port });
        let text = "";
        socket.on("data", (chunk: Buffer) => (text += chunk.toString()));
        socket.on("error", () => undefined);
        socket.write(start);
        const timer = setInterval(() => socket.write("x"), 200);
        socket.on("close", () => {
          clearInterval(timer);
          resolve(text);
        });
      });
    const slowV1 = trickle("POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\nx-slow: ");
    const slowApi = trickle("GET /api/v1/models HTTP/1.1\r\nhost: gw\r\nx-slow: ");
    expect((await normalRequest()).choices[0]?.message.content).toBe("ok");
    const [v1, api] = await Promise.all([slowV1, slowApi]);
    expect(statusOf(v1)).toBe(408);
    expect(JSON.parse(v1.slice(v1.indexOf("\r\n\r\n") + 4))).toMatchObject({ error: { type: "invalid_request_error", code: "request_timeout", param: null } });
    expect(statusOf(api)).toBe(408);
    expect(JSON.parse(api.slice(api.indexOf("\r\n\r\n") + 4))).toMatchObject({ error: { code: "request_timeout", hint: expect.any(String) } });
  });
});

/*
 * Each limit of server.yaml's `limits:`, set small on a gateway of its own
 * (the server's and `llmgw gateway`'s ports are made by the same factory),
 * with a normal request answered beside each abuse.
 */

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

/**
 * A provider that answers at once; for a request whose message is "hold",
 * once release() is called (streamed when asked); for "drip", a stream of
 * tokens that ends only when the gateway closes it.
 */
async function holdingProvider(): Promise<{ base: string; held: () => number; release: () => void }> {
  const waiting: (() => void)[] = [];
  const server = createServer((request, response) => {
    let text = "";
    request.on("data", (chunk: Buffer) => (text += chunk.toString()));
    request.on("end", () => {
      const asked = JSON.parse(text) as { stream?: boolean; messages: { content: string }[] };
      const answer = () => {
        if (asked.stream) {
          response.writeHead(200, { "content-type": "text/event-stream" });
          response.write(`data: ${JSON.stringify({ id: "x", object: "chat.completion.chunk", created: 1, model: "echo", choices: [{ index: 0, delta: { content: "ok" }, finish_reason: null }] })}\n\n`);
          response.end("data: [DONE]\n\n");
          return;
        }
        response.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(echoChatCompletion) }).end(echoChatCompletion);
      };
      if (asked.messages[0]?.content === "drip") {
        // An engine that keeps writing tokens until its connection is closed.
        response.writeHead(200, { "content-type": "text/event-stream" });
        const token = `data: ${JSON.stringify({ id: "x", object: "chat.completion.chunk", created: 1, model: "echo", choices: [{ index: 0, delta: { content: "." }, finish_reason: null }] })}\n\n`;
        const drip = setInterval(() => response.write(token), 20);
        response.write(token);
        response.on("close", () => clearInterval(drip));
      } else if (asked.messages[0]?.content === "hold") waiting.push(answer);
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    held: () => waiting.length,
    release: () => waiting.splice(0).forEach((answer) => answer()),
  };
}

/** Every caller is the key its bearer token names, so a test can be two keys at once. */
const bearerIsKey: GatewayPolicy = {
  authenticate: (authorization) => ({ key: authorization?.replace(/^Bearer /, "") ?? "none", allowedModels: null }),
  admit: () => undefined,
  record: () => undefined,
};

/** A gateway on its own port with these limits, and an admin-style route that reads JSON bodies under the same body limit. */
async function limitedGateway(limits: Partial<ServerLimits>, base: string, policy: GatewayPolicy = bearerIsKey): Promise<number> {
  const full: ServerLimits = { ...defaultServerLimits, ...limits };
  const gateway = new Gateway({
    policy,
    reportDemand: () => undefined,
    environment: {},
    log: { warn: () => undefined },
    requestsPerKey: { max: full.requestsPerKey, setting: "limits.requests_per_key in server.yaml" },
  });
  gateway.swap({ revision: 1, aliases: {}, models: [routingModel("echo", { engine: null, external: { base_url: base, api_key_env: null, model: null } })] });
  const app = Fastify({
    logger: false,
    serverFactory: gatewayServerFactory(gateway, { warn: () => undefined }, undefined, full),
    clientErrorHandler: clientErrorAnswerer(full.headerBytes),
    bodyLimit: full.adminBodyBytes,
  });
  installErrorHandling(app);
  registerGatewayRoutes(app, gateway);
  app.get("/health", async () => ({ ok: true }));
  app.post("/api/v1/echo", async (request) => ({ got: request.body }));
  await app.listen({ host: "127.0.0.1", port: 0 });
  closers.push(() => app.close());
  return (app.server.address() as AddressInfo).port;
}

/** The official client on a connection of its own per request: a kept-alive pool would blur the connection limits under test. */
function openAI(port: number, apiKey = "team-a"): OpenAI {
  const dispatcher = new Agent({ pipelining: 0 });
  closers.push(() => dispatcher.close());
  // undici's fetch is the one the dispatcher belongs to; its types differ from the DOM's only in names.
  const viaDispatcher = (url: string, init: object) => undiciFetch(url, { ...init, dispatcher });
  return new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey, maxRetries: 0, fetch: viaDispatcher as unknown as typeof fetch });
}

const ask = (client: OpenAI, content = "still there?", options: { signal?: AbortSignal } = {}) =>
  client.chat.completions.create({ model: "echo", messages: [{ role: "user", content }] }, options);

/** What a call was refused with, as the OpenAI client raises it. */
async function refusedWith(call: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  try {
    await call;
  } catch (error) {
    if (error instanceof OpenAI.APIError) return error;
    throw error;
  }
  throw new Error("expected the request to be refused");
}

const chatBytes = (content: string, extraHeaders = "") => {
  const text = JSON.stringify({ model: "echo", messages: [{ role: "user", content }] });
  return `POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\n${extraHeaders}\r\n${text}`;
};

const bodyOf = (answer: string): unknown => JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4));

describe("limits.body_bytes", () => {
  it("refuses a /v1 body over the limit with 413 in OpenAI's shape, and an admin body over it in the API's, answering normal requests meanwhile", async () => {
    const provider = await holdingProvider();
    const port = await limitedGateway({ bodyBytes: 2048, adminBodyBytes: 2048 }, provider.base);
    const client = openAI(port);
    const tooLarge = await refusedWith(ask(client, "x".repeat(3000)));
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.error).toMatchObject({ type: "invalid_request_error", code: "body_too_large", param: null });
    expect(tooLarge.message).toContain("2 KiB");
    expect(tooLarge.message).toContain("limits.body_bytes");
    expect((await ask(client)).choices[0]?.message.content).toBe("ok");
    const admin = await fetch(`http://127.0.0.1:${port}/api/v1/echo`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ text: "x".repeat(3000) }) });
    expect(admin.status).toBe(413);
    expect(await admin.json()).toMatchObject({ error: { code: "body_too_large", message: expect.stringContaining("2 KiB"), hint: expect.stringContaining("limits.body_bytes") } });
  });
});

describe("limits.header_bytes", () => {
  it("refuses a head over the limit with 431 whether it asks for /v1 or the API, ended or still coming, and node's parser holds the same limit", async () => {
    const provider = await holdingProvider();
    const port = await limitedGateway({ headerBytes: 2048 }, provider.base);
    const long = `x-long: ${"a".repeat(3000)}\r\n`;
    const [v1, api, unended] = await Promise.all([
      closingExchange(port, chatBytes("hi", long)),
      closingExchange(port, `GET /api/v1/models HTTP/1.1\r\nhost: gw\r\n${long}\r\n`),
      closingExchange(port, `POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\n${long}`),
    ]);
    expect(statusOf(v1)).toBe(431);
    expect(bodyOf(v1)).toMatchObject({ error: { type: "invalid_request_error", code: "headers_too_large", message: expect.stringContaining("2 KiB") } });
    expect(statusOf(api)).toBe(431);
    expect(bodyOf(api)).toMatchObject({ error: { code: "headers_too_large", hint: expect.stringContaining("limits.header_bytes") } });
    expect(statusOf(unended)).toBe(431);
    // A connection node reads (handed over for its first request): its next head meets the same limit.
    const handedOver = new RawClient(port, closers);
    handedOver.send("GET /health HTTP/1.1\r\nhost: gw\r\n\r\n");
    expect((await handedOver.next()).status).toBe(200);
    handedOver.send(`GET /health HTTP/1.1\r\nhost: gw\r\n${long}\r\n`);
    const overNode = await handedOver.next();
    expect(overNode.status).toBe(431);
    expect(JSON.parse(overNode.body)).toMatchObject({ error: { code: "headers_too_large", message: expect.stringContaining("2 KiB") } });
    expect((await ask(openAI(port))).choices[0]?.message.content).toBe("ok");
  });
});

describe("limits.idle_timeout", () => {
  it("closes a kept-alive connection that sends nothing more after its answer", async () => {
    const provider = await holdingProvider();
    const port = await limitedGateway({ idleTimeoutMs: 300 }, provider.base);
    // The front reads the limit from node's server, where it holds for the connections node reads too.
    const idle = new RawClient(port, closers);
    idle.send(chatBytes("then idle"));
    expect((await idle.next()).status).toBe(200);
    await idle.closed;
    expect((await ask(openAI(port))).choices[0]?.message.content).toBe("ok");
  });
});

describe("limits.header_timeout", () => {
  it("answers 408 to a head sent a byte every few hundred ms past a short limit", async () => {
    const provider = await holdingProvider();
    const port = await limitedGateway({ headerTimeoutMs: 500, requestTimeoutMs: 1000 }, provider.base);
    const slow = new RawClient(port, closers);
    slow.send("POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\nx-slow: ");
    const trickle = setInterval(() => slow.send("x"), 200);
    const answer = await slow.next().finally(() => clearInterval(trickle));
    expect(answer.status).toBe(408);
    expect(JSON.parse(answer.body)).toMatchObject({ error: { code: "request_timeout" } });
    await slow.closed;
    expect((await ask(openAI(port))).choices[0]?.message.content).toBe("ok");
  });
});

describe("limits.connections", () => {
  it("closes a new connection past the limit while the open ones are still answered", async () => {
    const provider = await holdingProvider();
    const port = await limitedGateway({ connections: 2 }, provider.base);
    const first = new RawClient(port, closers);
    const second = new RawClient(port, closers);
    // Answered, so the server has taken both before the third arrives.
    first.send(chatBytes("one"));
    second.send("GET /health HTTP/1.1\r\nhost: gw\r\n\r\n");
    expect([(await first.next()).status, (await second.next()).status]).toEqual([200, 200]);
    const third = new RawClient(port, closers);
    third.send(chatBytes("three"));
    let thirdAnswered = false;
    void third.next().then(() => (thirdAnswered = true));
    await third.closed;
    expect(thirdAnswered).toBe(false);
    first.send(chatBytes("one again"));
    second.send(chatBytes("two again"));
    expect([(await first.next()).status, (await second.next()).status]).toEqual([200, 200]);
  });
});

describe("limits.requests_per_key", () => {
  it("answers the request past the cap 429 in OpenAI's shape while the others are open, other keys still served, and takes new ones once they end", async () => {
    const provider = await holdingProvider();
    const port = await limitedGateway({ requestsPerKey: 2 }, provider.base);
    const client = openAI(port);
    const open = [ask(client, "hold"), client.chat.completions.create({ model: "echo", stream: true, messages: [{ role: "user", content: "hold" }] })];
    await vi.waitFor(() => expect(provider.held()).toBe(2));
    const refused = await refusedWith(ask(client));
    expect(refused.status).toBe(429);
    expect(refused.error).toMatchObject({ type: "requests", code: "too_many_requests_in_flight" });
    expect(refused.message).toContain('API key "team-a" already has 2 requests in flight');
    expect(refused.message).toContain("limits.requests_per_key in server.yaml: 2");
    expect(refused.headers?.get("retry-after")).toBe("1");
    expect((await ask(openAI(port, "team-b"))).choices[0]?.message.content).toBe("ok");
    provider.release();
    const [whole, stream] = await Promise.all(open);
    expect((whole as OpenAI.ChatCompletion).choices[0]?.message.content).toBe("ok");
    for await (const _chunk of stream as AsyncIterable<unknown>) void _chunk;
    // Both slots are free once the answer and the stream have ended.
    const again = await Promise.all([ask(client), ask(client)]);
    expect(again.map((answer) => answer.choices[0]?.message.content)).toEqual(["ok", "ok"]);
  });

  it("holds a key with its own max_in_flight to that cap, lower or higher than the server's, and says which cap refused it", async () => {
    const provider = await holdingProvider();
    // Gateway keys as the store hands them over: each key's secret is its name, so a client is the key it names.
    const key = (name: string, maxInFlight: number | null): GatewayKey => ({ id: name, name, hash: hashToken(name), models: null, rpm: null, tpm: null, maxInFlight, expiresAt: null, createdAt: "2026-12-01T00:00:00Z", revokedAt: null });
    const keys = await KeysPolicy.start({ readKeys: async () => [key("trial", 2), key("batch", 4), key("team-b", null)], writeUsage: async () => undefined }, { refreshIntervalMs: 3_600_000, flushIntervalMs: 3_600_000 });
    closers.push(() => keys.close());
    const port = await limitedGateway({ requestsPerKey: 3 }, provider.base, keys);
    const trial = openAI(port, "trial");
    const open = [ask(trial, "hold"), ask(trial, "hold")];
    await vi.waitFor(() => expect(provider.held()).toBe(2));
    const refused = await refusedWith(ask(trial));
    expect(refused.status).toBe(429);
    expect(refused.error).toMatchObject({ type: "requests", code: "too_many_requests_in_flight" });
    expect(refused.message).toContain('API key "trial" already has 2 requests in flight, the most this key may have (its own max_in_flight: 2');
    expect(refused.message).toContain("in place of limits.requests_per_key in server.yaml: 3");
    expect(refused.message).toContain("--max-in-flight");
    expect(refused.headers?.get("retry-after")).toBe("1");
    // Another key, under the server's cap, is served while trial is full.
    expect((await ask(openAI(port, "team-b"))).choices[0]?.message.content).toBe("ok");
    // A key allowed more than the server's 3 gets its 4 in flight; its fifth is refused at its own cap.
    const batch = openAI(port, "batch");
    open.push(...[1, 2, 3, 4].map(() => ask(batch, "hold")));
    await vi.waitFor(() => expect(provider.held()).toBe(6));
    expect((await refusedWith(ask(batch))).message).toContain("its own max_in_flight: 4");
    provider.release();
    expect((await Promise.all(open)).map((answer) => answer.choices[0]?.message.content)).toEqual(["ok", "ok", "ok", "ok", "ok", "ok"]);
    expect((await ask(trial)).choices[0]?.message.content).toBe("ok");
  });

  it("frees the slots of streams the client gave up on while the engine was still writing", async () => {
    const provider = await holdingProvider();
    const port = await limitedGateway({ requestsPerKey: 2 }, provider.base);
    const client = openAI(port);
    const giveUp = new AbortController();
    const streams = await Promise.all(
      [1, 2].map(() => client.chat.completions.create({ model: "echo", stream: true, messages: [{ role: "user", content: "drip" }] }, { signal: giveUp.signal })),
    );
    // Both streams are under way, each with its first token read.
    for (const stream of streams) await stream[Symbol.asyncIterator]().next();
    expect((await refusedWith(ask(client))).status).toBe(429);
    giveUp.abort();
    // The gateway learns of the abort at its next write to the closed connection: the slots come free then.
    await vi.waitFor(async () => expect((await ask(client)).choices[0]?.message.content).toBe("ok"));
  });
});
