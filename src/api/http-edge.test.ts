import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import type { FastifyInstance } from "fastify";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readErrorBody } from "../protocol/error-body.js";
import { CatalogService } from "../services/catalog-service.js";
import { buildApp } from "../server/build-app.js";
import { openStore, type Store } from "../store/open-store.js";
import { insertToken } from "../store/token-rows.js";
import { hashToken, newToken } from "../auth/tokens.js";
import { softwareVersion } from "../protocol/api-version.js";

interface RawAnswer {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
  /** A socket error the client saw (ECONNRESET), if any. */
  readonly socketError: string | undefined;
}

/** Sends bytes exactly as given (no client library would send a bad escape or a broken chunk) and reads the answer. */
function sendRaw(port: number, head: string, body?: Buffer): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    let socketError: string | undefined;
    socket.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      const text = Buffer.concat(chunks).toString("latin1");
      const headEnd = text.indexOf("\r\n\r\n");
      const length = /content-length: (\d+)/i.exec(text);
      if (headEnd >= 0 && length && text.length >= headEnd + 4 + Number(length[1])) socket.end();
    });
    socket.on("error", (error: NodeJS.ErrnoException) => (socketError = error.code ?? error.message));
    socket.on("close", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      const [headText = "", ...rest] = text.split("\r\n\r\n");
      const [statusLine = "", ...headerLines] = headText.split("\r\n");
      const headers = Object.fromEntries(headerLines.map((line) => [line.slice(0, line.indexOf(":")).toLowerCase(), line.slice(line.indexOf(":") + 1).trim()]));
      resolve({ status: Number(statusLine.split(" ")[1]), headers, body: rest.join("\r\n\r\n"), socketError });
    });
    socket.write(head);
    if (body) socket.write(body, () => undefined);
  });
}

describe("every answer in the documented error shape, over real HTTP", () => {
  let store: Store;
  let app: FastifyInstance;
  let port: number;
  let dataDir: string;
  const admin = newToken("admin");

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), "llmgw-edge-"));
    store = await openStore({ database: undefined, dataDir });
    await insertToken(store.db, { id: randomUUID(), name: "admin", role: "admin", hash: hashToken(admin) }, new Date().toISOString());
    app = await buildApp({ store, catalog: new CatalogService(store, [], "server.yaml"), adminTokenHint: "see admin-token" });
    await app.listen({ host: "127.0.0.1", port: 0 });
    port = (app.server.address() as net.AddressInfo).port;
  });
  afterAll(async () => {
    await app.close();
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const expectErrorShape = (answer: { headers: Record<string, string | string[] | undefined> }, text: string, code: string) => {
    expect(answer.headers["llmgw-version"]).toBe(softwareVersion);
    expect(readErrorBody(text)?.code).toBe(code);
    expect(readErrorBody(text)?.hint).toBeTruthy();
  };

  it("answers a bad percent-escape in a path with invalid_input, naming the path", async () => {
    const answer = await sendRaw(port, `GET /api/v1/models/qwen%zz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${admin}\r\n\r\n`);
    expect(answer.status).toBe(400);
    expectErrorShape(answer, answer.body, "invalid_input");
    expect(readErrorBody(answer.body)?.message).toContain("/api/v1/models/qwen%zz");
  });

  it("answers a path segment longer than any accepted name with uri_too_long", async () => {
    const answer = await request(`http://127.0.0.1:${port}/api/v1/models/${"a".repeat(2000)}`, { headers: { authorization: `Bearer ${admin}` } });
    expect(answer.statusCode).toBe(414);
    expectErrorShape(answer, await answer.body.text(), "uri_too_long");
  });

  it("answers headers over the parser's limit with headers_too_large (431)", async () => {
    const answer = await sendRaw(port, `GET /api/v1/models HTTP/1.1\r\nHost: x\r\nX-Padding: ${"p".repeat(20_000)}\r\n\r\n`);
    expect(answer.status).toBe(431);
    expectErrorShape(answer, answer.body, "headers_too_large");
  });

  it("answers a path over the parser's limit the same way", async () => {
    const answer = await sendRaw(port, `GET /api/v1/models/${"a".repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    expect(answer.status).toBe(431);
    expectErrorShape(answer, answer.body, "headers_too_large");
  });

  it("answers a chunked body the HTTP parser refuses with invalid_input", async () => {
    const answer = await sendRaw(
      port,
      `POST /api/v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${admin}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`,
    );
    expect(answer.status).toBe(400);
    expectErrorShape(answer, answer.body, "invalid_input");
    expect(readErrorBody(answer.body)?.message).toContain("not well-formed HTTP");
  });

  it("answers a body over the limit with 413 and the limit, without resetting the connection", async () => {
    const body = Buffer.alloc(5 * 1024 * 1024, 0x20);
    const answer = await sendRaw(
      port,
      `POST /api/v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${admin}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
      body,
    );
    expect(answer.status).toBe(413);
    expectErrorShape(answer, answer.body, "body_too_large");
    expect(readErrorBody(answer.body)?.message).toContain("4 MiB");
    expect(answer.socketError).toBeUndefined();
  });

  it("answers an oversized body sent by a real client (undici) with the 413 body", async () => {
    const answer = await request(`http://127.0.0.1:${port}/api/v1/models`, {
      method: "POST",
      headers: { authorization: `Bearer ${admin}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "big", owner: "x".repeat(5 * 1024 * 1024) }),
    });
    expect(answer.statusCode).toBe(413);
    expectErrorShape(answer, await answer.body.text(), "body_too_large");
  });
});
