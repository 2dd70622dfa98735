import { connect, createServer, type AddressInfo, type Socket } from "node:net";
import type { IncomingHttpHeaders } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { FrontResponse } from "./front-response.js";
import { Http1ResponseReader } from "../upstream/http1-response-reader.js";

const closers: (() => void)[] = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

/** A FrontResponse on a real connection; `read` is what the client received, read as HTTP/1.1, once the server ends the connection. */
async function answerOnSocket(write: (response: FrontResponse) => void): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> {
  const server = createServer((socket: Socket) => {
    const response = new FrontResponse(socket, false, 5, { answered: () => socket.end() });
    write(response);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(() => server.close());
  const client = connect({ host: "127.0.0.1", port: (server.address() as AddressInfo).port });
  const parts: Buffer[] = [];
  client.on("data", (part: Buffer) => parts.push(part));
  await new Promise((resolve) => client.on("end", resolve));
  client.destroy();
  let status = 0;
  let headers: IncomingHttpHeaders = {};
  const body: Buffer[] = [];
  const reader = new Http1ResponseReader({ onHead: (code, fields) => ((status = code), (headers = fields)), onBody: (chunk) => body.push(Buffer.from(chunk)), onEnd: () => undefined });
  reader.push(Buffer.concat(parts));
  reader.close();
  expect(reader.done).toBe(true);
  return { status, headers, body: Buffer.concat(body) };
}

describe("FrontResponse", () => {
  it("writes a JSON answer with its length, and the headers given as a list or an object", async () => {
    const text = '{"ok":"yes ✓"}';
    const read = await answerOnSocket((response) => {
      response.setHeader("x-llmgw-arm", "canary");
      response.writeHead(200, ["content-type", "application/json", "content-length", String(Buffer.byteLength(text))]);
      response.end(Buffer.from(text));
    });
    expect(read.status).toBe(200);
    expect(read.headers).toMatchObject({ "content-type": "application/json", "x-llmgw-arm": "canary", connection: "close" });
    expect(read.body.toString()).toBe(text);
  });

  it("sends a stream in chunks, its text as UTF-8 beside a head with other than ASCII in it", async () => {
    const events = ["data: héllo\n\n", "data: ✓ done\n\n", "data: [DONE]\n\n"];
    const read = await answerOnSocket((response) => {
      // obs-text in a header value is latin1 on the wire; the body stays UTF-8.
      response.writeHead(200, { "content-type": "text/event-stream", "x-note": "caf\u00e9" });
      for (const event of events) response.write(event);
      response.end();
    });
    expect(read.headers).toMatchObject({ "transfer-encoding": "chunked", "x-note": "caf\u00e9" });
    expect(read.body.toString("utf8")).toBe(events.join(""));
  });

  it("gathers what is written while corked, in order, and ends whole when ended before the uncork", async () => {
    const read = await answerOnSocket((response) => {
      response.writeHead(200, ["content-type", "text/event-stream"]);
      response.cork();
      response.write("data: 1\n\n");
      response.write(Buffer.from("data: 2\n\n"));
      response.write("data: 3\n\n");
      response.end("data: [DONE]\n\n");
      response.uncork();
    });
    expect(read.body.toString()).toBe("data: 1\n\ndata: 2\n\ndata: 3\n\ndata: [DONE]\n\n");
  });

  it("sends a body larger than one write unchanged", async () => {
    const big = Buffer.alloc(200 * 1024);
    for (let index = 0; index < big.length; index += 1) big[index] = index % 251;
    const read = await answerOnSocket((response) => {
      response.writeHead(200, { "content-type": "application/octet-stream" });
      response.write(big);
      response.end(big);
    });
    expect(read.body.equals(Buffer.concat([big, big]))).toBe(true);
  });

  it("has no body and no chunks for a 204, and says so in its head", async () => {
    const read = await answerOnSocket((response) => {
      response.writeHead(204, {});
      response.end();
    });
    expect(read.status).toBe(204);
    expect(read.headers["transfer-encoding"]).toBeUndefined();
  });

  it("refuses a header value with a line break, which would forge the rest of the answer", async () => {
    let refusal: unknown;
    const read = await answerOnSocket((response) => {
      try {
        response.writeHead(200, { "x-model": "a\r\nset-cookie: stolen=1" });
      } catch (error) {
        refusal = error;
      }
      // Nothing has left: the answer can still be an error of its own.
      response.writeHead(500, { "content-length": "7" });
      response.end("refused");
    });
    expect(String(refusal)).toMatch(/header x-model has a line break or a control character/);
    expect(read.status).toBe(500);
    expect(read.headers["set-cookie"]).toBeUndefined();
  });
});
