import { createServer as createHttpServer, type IncomingHttpHeaders, type Server as HttpServer } from "node:http";
import { createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../../../test/support/fake-engine.js";
import { Http1Pool } from "./http1-pool.js";
import type { UpstreamController, UpstreamHandler, UpstreamRequest } from "./upstream-dispatcher.js";

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A handler that gathers the answer, and lets a test act on the controller as data arrives. */
function gather(onData?: (controller: UpstreamController, chunk: Buffer, seen: number) => void): { handler: UpstreamHandler; answer: Promise<Answer> } {
  let resolve!: (answer: Answer) => void;
  let reject!: (error: Error) => void;
  const answer = new Promise<Answer>((ok, fail) => {
    resolve = ok;
    reject = fail;
  });
  const parts: Buffer[] = [];
  let status = 0;
  let headers: IncomingHttpHeaders = {};
  let seen = 0;
  const handler: UpstreamHandler = {
    onRequestStart: () => undefined,
    onResponseStart: (_controller, statusCode, responseHeaders) => {
      status = statusCode;
      headers = responseHeaders;
    },
    onResponseData: (controller, chunk) => {
      parts.push(chunk);
      seen += 1;
      onData?.(controller, chunk, seen);
    },
    onResponseEnd: () => resolve({ status, headers, body: Buffer.concat(parts).toString() }),
    onResponseError: (_controller, error) => reject(error),
  };
  return { handler, answer };
}

function post(path: string, body: string, headers: Record<string, string> = { "content-type": "application/json" }): UpstreamRequest {
  return { method: "POST", path, headers, body: Buffer.from(body) };
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** An OpenAI-shaped upstream on node:http that counts the connections it was opened on. */
async function httpUpstream(answer: (request: { url: string; body: string; headers: IncomingHttpHeaders }, respond: (status: number, headers: Record<string, string>, body: string) => void) => void): Promise<{ url: URL; connections: () => number; server: HttpServer }> {
  let connections = 0;
  const server = createHttpServer((request, response) => {
    const parts: Buffer[] = [];
    request.on("data", (part: Buffer) => parts.push(part));
    request.on("end", () =>
      answer({ url: request.url ?? "", body: Buffer.concat(parts).toString(), headers: request.headers }, (status, headers, body) => response.writeHead(status, headers).end(body)),
    );
  });
  server.on("connection", () => (connections += 1));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  closers.push(async () => server.closeAllConnections());
  return { url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`), connections: () => connections, server };
}

/** A raw TCP upstream that does what the test says with each connection's bytes: for answers no HTTP server would give. */
async function rawUpstream(onConnection: (socket: Socket, index: number) => void): Promise<{ url: URL; server: NetServer }> {
  let index = 0;
  const sockets = new Set<Socket>();
  const server = createNetServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => undefined);
    onConnection(socket, index++);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  );
  return { url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`), server };
}

function pool(url: URL, options?: ConstructorParameters<typeof Http1Pool>[1]): Http1Pool {
  const made = new Http1Pool(url, options);
  closers.unshift(() => made.close());
  return made;
}

describe("Http1Pool", () => {
  it("sends the body, path and headers, and reads the answer", async () => {
    const upstream = await httpUpstream((request, respond) => respond(201, { "content-type": "application/json", "x-seen": `${request.url} ${request.headers["x-request-id"]} ${request.headers.host}` }, request.body.toUpperCase()));
    const { handler, answer } = gather();
    pool(upstream.url).dispatch(post("/v1/chat/completions", '{"model":"m"}', { "content-type": "application/json", "x-request-id": "req-1" }), handler);
    await expect(answer).resolves.toMatchObject({ status: 201, body: '{"MODEL":"M"}', headers: { "x-seen": `/v1/chat/completions req-1 ${upstream.url.host}` } });
  });

  it("carries requests one after another on one kept-alive connection", async () => {
    const upstream = await httpUpstream((request, respond) => respond(200, { "content-type": "text/plain" }, request.body));
    const connections = pool(upstream.url);
    for (let count = 0; count < 20; count += 1) {
      const { handler, answer } = gather();
      connections.dispatch(post("/", `request ${count}`), handler);
      expect((await answer).body).toBe(`request ${count}`);
    }
    expect(upstream.connections()).toBe(1);
  });

  it("opens no more connections than it may, and answers every request waiting for one in turn", async () => {
    const upstream = await httpUpstream((request, respond) => setTimeout(() => respond(200, {}, request.body), 5));
    const connections = pool(upstream.url, { connections: 2 });
    const answers = Array.from({ length: 12 }, (_, count) => {
      const { handler, answer } = gather();
      connections.dispatch(post("/", `request ${count}`), handler);
      return answer;
    });
    const bodies = (await Promise.all(answers)).map((answer) => answer.body);
    expect(bodies).toEqual(Array.from({ length: 12 }, (_, count) => `request ${count}`));
    expect(upstream.connections()).toBe(2);
  });

  it("passes a stream's events on as they are sent, before the stream ends", async () => {
    let sendRest!: () => void;
    const upstream = await rawUpstream((socket) => {
      socket.once("data", () => {
        socket.write("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n");
        socket.write("d\r\ndata: first\n\n\r\n");
        sendRest = () => socket.write("e\r\ndata: second\n\n\r\n0\r\n\r\n");
      });
    });
    let firstSeen!: () => void;
    const first = new Promise<void>((resolve) => (firstSeen = resolve));
    const { handler, answer } = gather((_controller, chunk) => {
      if (chunk.toString().includes("first")) firstSeen();
    });
    pool(upstream.url).dispatch(post("/", "{}"), handler);
    await first;
    sendRest();
    await expect(answer).resolves.toMatchObject({ status: 200, body: "data: first\n\ndata: second\n\n", headers: { "content-type": "text/event-stream" } });
  });

  it("sends a request again on a new connection when the kept-alive one it went out on was closed by the upstream unanswered", async () => {
    // The first connection answers once, then closes when the next request arrives without reading it: the two crossed.
    const upstream = await rawUpstream((socket, index) => {
      let requests = 0;
      socket.on("data", () => {
        requests += 1;
        if (index === 0 && requests === 2) socket.destroy();
        else socket.write(`HTTP/1.1 200 OK\r\ncontent-length: 12\r\n\r\nconnection ${index}`);
      });
    });
    const connections = pool(upstream.url);
    const first = gather();
    connections.dispatch(post("/", "{}"), first.handler);
    expect((await first.answer).body).toBe("connection 0");
    const second = gather();
    connections.dispatch(post("/", "{}"), second.handler);
    expect((await second.answer).body).toBe("connection 1");
  });

  it("does not send again a request whose own new connection closed unanswered", async () => {
    let opened = 0;
    const upstream = await rawUpstream((socket) => {
      opened += 1;
      socket.once("data", () => socket.destroy());
    });
    const { handler, answer } = gather();
    pool(upstream.url).dispatch(post("/", "{}"), handler);
    await expect(answer).rejects.toThrow(/closed the connection without answering|ECONNRESET/);
    expect(opened).toBe(1);
  });

  it("fails a request whose answer is cut after its head, naming the cut", async () => {
    const upstream = await rawUpstream((socket) => {
      socket.once("data", () => {
        socket.write("HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\npart of it");
        setTimeout(() => socket.destroy(), 10);
      });
    });
    const seen: string[] = [];
    const { handler, answer } = gather((_controller, chunk) => seen.push(chunk.toString()));
    pool(upstream.url).dispatch(post("/", "{}"), handler);
    await expect(answer).rejects.toThrow(/before its answer was complete|ECONNRESET/);
    expect(seen.join("")).toBe("part of it");
  });

  it("reads an answer framed by the connection's close, then opens a new connection for the next request", async () => {
    const upstream = await rawUpstream((socket, index) => {
      socket.once("data", () => socket.end(`HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nuntil close ${index}`));
    });
    const connections = pool(upstream.url);
    for (const index of [0, 1]) {
      const { handler, answer } = gather();
      connections.dispatch(post("/", "{}"), handler);
      expect((await answer).body).toBe(`until close ${index}`);
    }
  });

  it("refuses a malformed answer and does not reuse its connection", async () => {
    const upstream = await rawUpstream((socket, index) => {
      socket.on("data", () => socket.write(index === 0 ? "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nnot-hex\r\n" : "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"));
    });
    const connections = pool(upstream.url);
    const broken = gather();
    connections.dispatch(post("/", "{}"), broken.handler);
    await expect(broken.answer).rejects.toThrow(/not valid HTTP\/1\.1: chunk size "not-hex" is not hexadecimal/);
    const next = gather();
    connections.dispatch(post("/", "{}"), next.handler);
    await expect(next.answer).resolves.toMatchObject({ body: "ok" });
  });

  it("opens a new connection when the upstream's keep-alive hint or the pool's idle time has run out", async () => {
    const hinted = await httpUpstream((_request, respond) => respond(200, { "keep-alive": "timeout=1" }, "ok"));
    const hintedPool = pool(hinted.url);
    for (let count = 0; count < 3; count += 1) {
      const { handler, answer } = gather();
      hintedPool.dispatch(post("/", "{}"), handler);
      await answer;
    }
    // timeout=1 leaves nothing once a second of margin is taken off: no connection is kept.
    expect(hinted.connections()).toBe(3);

    const plain = await httpUpstream((_request, respond) => respond(200, {}, "ok"));
    const shortPool = pool(plain.url, { idleTimeoutMs: 1 });
    for (let count = 0; count < 2; count += 1) {
      const { handler, answer } = gather();
      shortPool.dispatch(post("/", "{}"), handler);
      await answer;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(plain.connections()).toBe(2);
  });

  it("holds the upstream back while paused and passes everything on once resumed", async () => {
    // Every line numbered: a chunk kept by the handler and overwritten by a later read would show here.
    const big = Array.from({ length: 200_000 }, (_, line) => `line ${line}`).join("\n");
    const upstream = await httpUpstream((_request, respond) => respond(200, { "content-type": "text/plain" }, big));
    let controller!: UpstreamController;
    let paused!: () => void;
    const pausedNow = new Promise<void>((resolve) => (paused = resolve));
    const { handler, answer } = gather((given, _chunk, seen) => {
      if (seen === 1) {
        controller = given;
        given.pause();
        paused();
      }
    });
    pool(upstream.url).dispatch(post("/", "{}"), handler);
    await pausedNow;
    let settled = false;
    void answer.finally(() => (settled = true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(settled).toBe(false);
    controller.resume();
    const received = (await answer).body;
    expect(received.length).toBe(big.length);
    // Compared whole, without a diff of four megabytes on failure.
    expect(received === big, "the body arrived with other bytes than were sent").toBe(true);
  });

  it("gives a request up when aborted: the upstream's connection closes and the handler hears the reason", async () => {
    let upstreamClosed!: () => void;
    const closed = new Promise<void>((resolve) => (upstreamClosed = resolve));
    const upstream = await rawUpstream((socket) => {
      socket.once("data", () => socket.write("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nfirst\r\n"));
      socket.on("close", () => upstreamClosed());
    });
    const { handler, answer } = gather((controller) => controller.abort(new Error("the client closed its connection")));
    const connections = pool(upstream.url);
    connections.dispatch(post("/", "{}"), handler);
    await expect(answer).rejects.toThrow("the client closed its connection");
    await closed;
    // Nothing is left under way: close() does not wait for the aborted request.
    await connections.close();
  });

  it("fails a request to an upstream that refuses connections with node's own code", async () => {
    const upstream = await rawUpstream(() => undefined);
    await new Promise<void>((resolve) => upstream.server.close(() => resolve()));
    const { handler, answer } = gather();
    pool(upstream.url).dispatch(post("/", "{}"), handler);
    await expect(answer).rejects.toMatchObject({ code: "ECONNREFUSED" });
  });

  it("sends nothing when a header value has a line break, which would smuggle a second request", async () => {
    let received = 0;
    const upstream = await rawUpstream((socket) => socket.on("data", (bytes: Buffer) => (received += bytes.length)));
    const { handler, answer } = gather();
    pool(upstream.url).dispatch(post("/", "{}", { authorization: "Bearer key\r\nx-evil: 1" }), handler);
    await expect(answer).rejects.toThrow("the upstream header authorization has a line break or a control character in its value");
    expect(received).toBe(0);
  });

  it("lets a request under way finish when closed, refuses new ones, and closes its connections", async () => {
    let respondNow: (() => void) | undefined;
    const upstream = await httpUpstream((_request, respond) => (respondNow = () => respond(200, {}, "finished")));
    let disconnected = 0;
    upstream.server.on("connection", (socket: Socket) => socket.on("close", () => (disconnected += 1)));
    const connections = new Http1Pool(upstream.url);
    const { handler, answer } = gather();
    connections.dispatch(post("/", "{}"), handler);
    const respond = await waitFor(() => respondNow, 5_000, "the upstream to receive the request", 5);
    const closing = connections.close();
    const late = gather();
    connections.dispatch(post("/", "{}"), late.handler);
    await expect(late.answer).rejects.toThrow(/closing its connections/);
    respond();
    await expect(answer).resolves.toMatchObject({ body: "finished" });
    await closing;
    await waitFor(() => disconnected > 0, 5_000, "the pool's connection to close", 5);
    expect(disconnected).toBe(1);
  });

  it("speaks plain HTTP only", () => {
    expect(() => new Http1Pool(new URL("https://api.example.com"))).toThrow(/plain HTTP only/);
  });
});
