import { createServer, type Server } from "node:http";
import { connect, type AddressInfo } from "node:net";
import Fastify from "fastify";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Gateway } from "../request/gateway.js";
import { gatewayServerFactory } from "./gateway-server-factory.js";
import { openPolicy } from "../policy/open-policy.js";
import { registerGatewayRoutes } from "./register-gateway-routes.js";
import { routingModel } from "../testing/routing-model.js";
import { answerClientError } from "../../http/error-handler.js";

/**
 * The front under abuse and under the request-smuggling cases proxies are
 * tested with: each case is sent as raw bytes to the gateway and to a plain
 * node:http server, and the gateway must refuse whatever node refuses (it
 * hands those connections to node's parser), never pass such a request to an
 * engine, and keep answering normal requests meanwhile.
 */

let provider: Server;
let plain: Server;
let port: number;
let plainPort: number;
let close: () => Promise<void>;
const bodiesSeen: string[] = [];

beforeAll(async () => {
  provider = createServer((request, response) => {
    let text = "";
    request.on("data", (chunk: Buffer) => (text += chunk.toString()));
    request.on("end", () => {
      bodiesSeen.push(text);
      const body = JSON.stringify({ id: "x", object: "chat.completion", created: 1, model: "echo", choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } });
      response.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) }).end(body);
    });
  });
  await new Promise<void>((resolve) => provider.listen(0, "127.0.0.1", resolve));
  plain = createServer((request, response) => {
    request.resume();
    request.on("end", () => response.end("parsed"));
  });
  await new Promise<void>((resolve) => plain.listen(0, "127.0.0.1", resolve));
  plainPort = (plain.address() as AddressInfo).port;
  const gateway = new Gateway({ policy: openPolicy, reportDemand: () => undefined, environment: {}, log: { warn: () => undefined } });
  const base = `http://127.0.0.1:${(provider.address() as AddressInfo).port}/v1`;
  gateway.swap({ revision: 1, aliases: {}, models: [routingModel("echo", { engine: null, external: { base_url: base, api_key_env: null, model: null } })] });
  const app = Fastify({ logger: false, serverFactory: gatewayServerFactory(gateway, { warn: () => undefined }), clientErrorHandler: answerClientError });
  registerGatewayRoutes(app, gateway);
  await app.listen({ host: "127.0.0.1", port: 0 });
  app.server.headersTimeout = 1000;
  app.server.requestTimeout = 1500;
  port = (app.server.address() as AddressInfo).port;
  close = async () => {
    await app.close();
    for (const server of [provider, plain]) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  };
});

afterAll(async () => close?.());

/** Sends bytes on a fresh connection and reads until the server closes it (or `waitMs` passes). */
function exchange(to: number, bytes: string, waitMs = 3000): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port: to });
    let text = "";
    const timer = setTimeout(() => socket.destroy(), waitMs);
    socket.on("data", (chunk: Buffer) => (text += chunk.toString("latin1")));
    socket.on("error", () => undefined);
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(text);
    });
    socket.end(bytes);
  });
}

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
};

describe("request smuggling at the gateway's front", () => {
  for (const [name, bytes] of Object.entries(smuggling)) {
    it(`refuses ${name} as node's own parser does, and no engine sees it`, async () => {
      const before = bodiesSeen.length;
      const [atGateway, atNode] = await Promise.all([exchange(port, bytes), exchange(plainPort, bytes)]);
      expect(statusOf(atNode), `node's own parser on ${name}`).not.toBe(200);
      expect(statusOf(atGateway), atGateway).toBe(statusOf(atNode));
      expect(bodiesSeen.length).toBe(before);
    });
  }

  it("answers the first of pipelined requests and refuses the second whose body is cut short, passing on only the whole one", async () => {
    const before = bodiesSeen.length;
    const whole = `${head}content-length: ${body.length}\r\n\r\n${body}`;
    const cut = `${head}content-length: ${body.length + 50}\r\n\r\n${body}`;
    const answer = await exchange(port, whole + cut);
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
