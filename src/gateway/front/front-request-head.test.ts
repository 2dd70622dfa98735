import { describe, expect, it } from "vitest";
import { readFrontRequest } from "./front-request-head.js";

const limits = { maxHeadBytes: 16 * 1024, maxBodyBytes: 1024 };
const read = (text: string, start = 0) => readFrontRequest(Buffer.from(text, "latin1"), start, limits);
const post = (path: string, headers: string, body = "{}") => `POST ${path} HTTP/1.1\r\n${headers}\r\n${body}`;

describe("readFrontRequest", () => {
  it.each([
    ["/v1/chat/completions", "chat/completions"],
    ["/v1/completions", "completions"],
    ["/v1/embeddings", "embeddings"],
  ])("takes a POST to %s with its headers, lower-cased and trimmed, and where its body is", (path, endpoint) => {
    const text = post(path, "Host: gw\r\nContent-Length: 2\r\nAuthorization:  Bearer k \t\r\nX-Request-Id:id-1\r\n");
    const request = read(text);
    expect(request).toEqual({
      endpoint,
      headers: { host: "gw", "content-length": "2", authorization: "Bearer k", "x-request-id": "id-1" },
      bodyStart: text.length - 2,
      bodyLength: 2,
      keepAlive: true,
    });
  });

  it("reads a request after others in the same bytes, and a request that asks to close its connection", () => {
    const first = post("/v1/embeddings", "host: gw\r\ncontent-length: 2\r\n");
    const second = post("/v1/completions", "host: gw\r\ncontent-length: 2\r\nconnection: close\r\n");
    expect(read(first + second, first.length)).toMatchObject({ endpoint: "completions", bodyStart: first.length + second.length - 2, keepAlive: false });
  });

  it("waits for a head that has not ended, however it is cut", () => {
    const text = post("/v1/chat/completions", "host: gw\r\ncontent-length: 2\r\n");
    const headEnd = text.indexOf("\r\n\r\n") + 4;
    for (let cut = 0; cut < headEnd; cut += 1) expect(read(text.slice(0, cut))).toBe("incomplete");
  });

  it.each([
    ["another method", "GET /v1/chat/completions HTTP/1.1\r\nhost: gw\r\n\r\n"],
    ["another route", post("/v1/models", "host: gw\r\ncontent-length: 2\r\n")],
    ["a query string", post("/v1/chat/completions?a=1", "host: gw\r\ncontent-length: 2\r\n")],
    ["a trailing slash", post("/v1/chat/completions/", "host: gw\r\ncontent-length: 2\r\n")],
    ["HTTP/1.0", "POST /v1/chat/completions HTTP/1.0\r\nhost: gw\r\ncontent-length: 2\r\n\r\n{}"],
    ["no host", post("/v1/chat/completions", "content-length: 2\r\n")],
    ["no length", post("/v1/chat/completions", "host: gw\r\n")],
    ["a length that is not a count", post("/v1/chat/completions", "host: gw\r\ncontent-length: +2\r\n")],
    ["a length with a tab after it, which node's parser refuses", post("/v1/chat/completions", "host: gw\r\ncontent-length: 2\t\r\n")],
    ["two lengths", post("/v1/chat/completions", "host: gw\r\ncontent-length: 2\r\ncontent-length: 2\r\n")],
    ["any header twice", post("/v1/chat/completions", "host: gw\r\ncontent-length: 2\r\nauthorization: a\r\nAuthorization: b\r\n")],
    ["a body in chunks", post("/v1/chat/completions", "host: gw\r\ntransfer-encoding: chunked\r\n")],
    ["a length beside chunks", post("/v1/chat/completions", "host: gw\r\ncontent-length: 2\r\ntransfer-encoding: chunked\r\n")],
    ["Expect: 100-continue", post("/v1/chat/completions", "host: gw\r\ncontent-length: 2\r\nexpect: 100-continue\r\n")],
    ["an upgrade", post("/v1/chat/completions", "host: gw\r\ncontent-length: 2\r\nconnection: upgrade\r\nupgrade: websocket\r\n")],
    ["a header line with no colon", post("/v1/chat/completions", "host: gw\r\ncontent-length: 2\r\nno colon\r\n")],
    ["a header name with a space", post("/v1/chat/completions", "host: gw\r\ncontent-length: 2\r\nbad name: 1\r\n")],
    ["a folded header line", post("/v1/chat/completions", "host: gw\r\ncontent-length: 2\r\nx-a: 1\r\n  more\r\n")],
    ["a bare line feed in a value", post("/v1/chat/completions", "host: gw\r\ncontent-length: 2\r\nx-a: 1\nx-b: 2\r\n")],
    ["a control character in a value", post("/v1/chat/completions", "host: gw\r\ncontent-length: 2\r\nx-a: a\u0000b\r\n")],
    ["a body over the limit", post("/v1/chat/completions", "host: gw\r\ncontent-length: 1025\r\n")],
  ])("leaves %s to node's server", (_what, text) => {
    expect(read(text)).toBe("other");
  });

  it("says a head is over the limit, ended or not, whatever route it asks for", () => {
    const long = `x-long: ${"a".repeat(limits.maxHeadBytes)}\r\n`;
    expect(read(post("/v1/chat/completions", `host: gw\r\ncontent-length: 2\r\n${long}`))).toBe("head-too-large");
    expect(read(`POST /v1/chat/completions HTTP/1.1\r\n${long}`)).toBe("head-too-large");
    expect(read(`GET /api/v1/models HTTP/1.1\r\nhost: gw\r\n${long}\r\n`)).toBe("head-too-large");
  });
});
