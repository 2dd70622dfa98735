import type { IncomingHttpHeaders } from "node:http";
import { describe, expect, it } from "vitest";
import { Http1ResponseReader, MalformedResponseError } from "./http1-response-reader.js";

interface Read {
  status: number | undefined;
  headers: IncomingHttpHeaders | undefined;
  body: string;
  ends: number;
  reader: Http1ResponseReader;
}

function reader(): Read {
  const read: Read = {
    status: undefined,
    headers: undefined,
    body: "",
    ends: 0,
    reader: undefined as unknown as Http1ResponseReader,
  };
  read.reader = new Http1ResponseReader({
    onHead: (status, headers) => {
      read.status = status;
      read.headers = headers;
    },
    onBody: (chunk) => (read.body += chunk.toString("latin1")),
    onEnd: () => (read.ends += 1),
  });
  return read;
}

/** The answer's bytes split at every possible place into two reads, and into one-byte reads: framing must not depend on where a read ends. */
function everySplit(answer: string): Read[] {
  const bytes = Buffer.from(answer, "latin1");
  const reads: Read[] = [];
  for (let at = 0; at <= bytes.length; at += 1) {
    const read = reader();
    read.reader.push(bytes.subarray(0, at));
    read.reader.push(bytes.subarray(at));
    reads.push(read);
  }
  const bytewise = reader();
  for (const byte of bytes) bytewise.reader.push(Buffer.from([byte]));
  reads.push(bytewise);
  return reads;
}

describe("Http1ResponseReader", () => {
  it("reads a body framed by content-length however the reads fall, and keeps the connection", () => {
    const answer = 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"ok":true}';
    for (const read of everySplit(answer)) {
      expect(read).toMatchObject({ status: 200, body: '{"ok":true}', ends: 1 });
      expect(read.headers).toMatchObject({ "content-type": "application/json", "content-length": "11" });
      expect(read.reader.reusable).toBe(true);
    }
  });

  it("decodes chunks with extensions and trailers, handing each part on as it arrives", () => {
    const answer = "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n6;name=value\r\ndata: \r\n9\r\n{\"a\":1}\n\n\r\n0\r\nx-trailer: 1\r\n\r\n";
    for (const read of everySplit(answer)) {
      expect(read).toMatchObject({ status: 200, body: 'data: {"a":1}\n\n', ends: 1 });
      expect(read.reader.reusable).toBe(true);
    }
  });

  it("hands body bytes on before the chunk they belong to is complete", () => {
    const read = reader();
    read.reader.push(Buffer.from("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n10\r\nhalf of a "));
    expect(read.body).toBe("half of a ");
    expect(read.ends).toBe(0);
  });

  it("reads a body with no length until the connection closes, and does not keep that connection", () => {
    const read = reader();
    read.reader.push(Buffer.from("HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nall of "));
    read.reader.push(Buffer.from("it"));
    expect(read.ends).toBe(0);
    expect(read.reader.close()).toBe("ended");
    expect(read).toMatchObject({ body: "all of it", ends: 1 });
    expect(read.reader.reusable).toBe(false);
  });

  it("says an answer was cut when the connection closes before its length or last chunk", () => {
    const byLength = reader();
    byLength.reader.push(Buffer.from("HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nshort"));
    expect(byLength.reader.close()).toBe("cut");
    const byChunks = reader();
    byChunks.reader.push(Buffer.from("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n"));
    expect(byChunks.reader.close()).toBe("cut");
    const noHead = reader();
    noHead.reader.push(Buffer.from("HTTP/1.1 200 O"));
    expect(noHead.reader.close()).toBe("cut");
    expect(noHead.reader.headRead).toBe(false);
    expect([byLength.ends, byChunks.ends, noHead.ends]).toEqual([0, 0, 0]);
  });

  it("skips interim answers and reads none of a 204's or 304's body", () => {
    const read = reader();
    read.reader.push(Buffer.from("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"));
    expect(read).toMatchObject({ status: 204, body: "", ends: 1 });
    expect(read.reader.reusable).toBe(true);
    const notModified = reader();
    notModified.reader.push(Buffer.from("HTTP/1.1 304 Not Modified\r\ncontent-length: 100\r\n\r\n"));
    expect(notModified).toMatchObject({ status: 304, body: "", ends: 1 });
  });

  it("ends a zero-length answer at its head", () => {
    const read = reader();
    read.reader.push(Buffer.from("HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"));
    expect(read).toMatchObject({ status: 200, body: "", ends: 1 });
    expect(read.reader.reusable).toBe(true);
  });

  it("does not keep a connection the upstream asked to close, an HTTP/1.0 one, or one with bytes after the answer", () => {
    const closing = reader();
    closing.reader.push(Buffer.from("HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nok"));
    expect(closing.reader.reusable).toBe(false);
    const old = reader();
    old.reader.push(Buffer.from("HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\nok"));
    expect(old.reader.reusable).toBe(false);
    const oldKept = reader();
    oldKept.reader.push(Buffer.from("HTTP/1.0 200 OK\r\nconnection: keep-alive\r\ncontent-length: 2\r\n\r\nok"));
    expect(oldKept.reader.reusable).toBe(true);
    const extra = reader();
    extra.reader.push(Buffer.from("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n"));
    expect(extra).toMatchObject({ body: "ok", ends: 1 });
    expect(extra.reader.reusable).toBe(false);
  });

  it("lets chunks win over a length sent beside them, and then drops the connection", () => {
    const read = reader();
    read.reader.push(Buffer.from("HTTP/1.1 200 OK\r\ncontent-length: 100\r\ntransfer-encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"));
    expect(read).toMatchObject({ body: "ok", ends: 1 });
    expect(read.reader.reusable).toBe(false);
  });

  it("takes a length repeated with the same value, and keeps repeated headers", () => {
    const read = reader();
    read.reader.push(Buffer.from("HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 2\r\nset-cookie: a=1\r\nset-cookie: b=2\r\nvary: a\r\nvary: b\r\n\r\nok"));
    expect(read).toMatchObject({ body: "ok", ends: 1 });
    expect(read.headers).toMatchObject({ "set-cookie": ["a=1", "b=2"], vary: "a, b" });
  });

  it.each([
    ["a status line that is not HTTP/1.x", "HTTP/2 200 OK\r\n\r\n", /status line/],
    ["a status that is not three digits", "HTTP/1.1 20 OK\r\n\r\n", /status line/],
    ["a header line with no colon", "HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", /not NAME: VALUE/],
    ["a folded header line", "HTTP/1.1 200 OK\r\na: 1\r\n folded\r\n\r\n", /not NAME: VALUE/],
    ["a header name that is not a token", "HTTP/1.1 200 OK\r\nbad name: 1\r\n\r\n", /not a token/],
    ["two different lengths", "HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\nok", /not one number/],
    ["a length that is not a number", "HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n", /not one number/],
    ["a chunk size that is not hexadecimal", "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n", /not hexadecimal/],
    ["a chunk not followed by CRLF", "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nokXX", /not followed by CRLF/],
    ["a switch of protocols", "HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\n\r\n", /switched protocols/],
  ])("refuses %s", (_what, answer, problem) => {
    const read = reader();
    const push = () => read.reader.push(Buffer.from(answer));
    expect(push).toThrow(MalformedResponseError);
    expect(push).toThrow(problem);
    expect(read.ends).toBe(0);
  });

  it("refuses a head or a chunk size line that never ends, before it fills memory", () => {
    const head = reader();
    expect(() => head.reader.push(Buffer.from(`HTTP/1.1 200 OK\r\nx: ${"a".repeat(70 * 1024)}`))).toThrow(/response head is over/);
    const chunkLine = reader();
    expect(() => chunkLine.reader.push(Buffer.from(`HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1;${"a".repeat(2048)}`))).toThrow(/chunk size line is over/);
  });
});
