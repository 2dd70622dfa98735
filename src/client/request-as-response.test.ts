import { createServer, type Server } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { isBadPortRefusal, requestAsResponse } from "./request-as-response.js";

/** Ports the Fetch standard blocks; the test listens on the first one free here. */
const blockedPorts = [6665, 6666, 6667, 6668, 6669, 10080];
let server: Server | undefined;

afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

async function listenOnABlockedPort(): Promise<number> {
  for (const port of blockedPorts) {
    const candidate = createServer((request, response) => {
      if (request.url === "/empty") {
        response.writeHead(204, { "x-llmgw-version": "test" }).end();
        return;
      }
      let body = "";
      request.on("data", (chunk: Buffer) => (body += chunk.toString()));
      request.on("end", () => response.writeHead(201, { "content-type": "application/json", "x-llmgw-version": "test" }).end(JSON.stringify({ method: request.method, body, token: request.headers.authorization })));
    });
    const bound = await new Promise<boolean>((resolve) => {
      candidate.once("error", () => resolve(false));
      candidate.listen(port, "127.0.0.1", () => resolve(true));
    });
    if (bound) {
      server = candidate;
      return port;
    }
  }
  throw new Error(`none of the ports ${blockedPorts.join(", ")} is free on 127.0.0.1`);
}

describe("reaching a server on a port fetch blocks", () => {
  it("is refused by fetch as a bad port, and answered through undici's client as fetch would answer", async () => {
    const port = await listenOnABlockedPort();
    const url = new URL(`http://127.0.0.1:${port}/api/v1/models`);
    const init = { method: "POST", headers: { authorization: "Bearer t", "content-type": "application/json" }, body: '{"name":"a"}' };
    const refusal = await fetch(url, init).catch((error: unknown) => error);
    expect(isBadPortRefusal(refusal)).toBe(true);

    const answer = await requestAsResponse(url, init, undefined);
    expect(answer.status).toBe(201);
    expect(answer.headers.get("x-llmgw-version")).toBe("test");
    expect(await answer.json()).toEqual({ method: "POST", body: '{"name":"a"}', token: "Bearer t" });

    const empty = await requestAsResponse(new URL(`http://127.0.0.1:${port}/empty`), { method: "GET", headers: {} }, undefined);
    expect([empty.status, await empty.text()]).toEqual([204, ""]);
  });

  it("takes any other failure for what it is", async () => {
    const refused = await fetch("http://127.0.0.1:1/").catch((error: unknown) => error);
    expect(isBadPortRefusal(new TypeError("fetch failed", { cause: new Error("connect ECONNREFUSED") }))).toBe(false);
    expect(isBadPortRefusal(refused)).toBe(true); // port 1 is blocked too: fetch never tries it
  });
});
