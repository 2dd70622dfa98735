import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type RunningServer } from "./start-server.js";

let workspace: string;
let dataDir: string;
let server: RunningServer;

beforeAll(async () => {
  workspace = await mkdtemp(path.join(os.tmpdir(), "llmgw-unauth-"));
  dataDir = path.join(workspace, "secret-place");
  server = await startServer({ dataDir, listen: "127.0.0.1:0", logger: false });
});

afterAll(async () => {
  await server.close();
  await rm(workspace, { recursive: true, force: true });
});

/** Every way in that needs a token, asked with none and with a wrong one. */
const asked: [string, string][] = [
  ["GET", "/"],
  ["GET", "/api/v1/models"],
  ["POST", "/api/v1/models"],
  ["GET", "/api/v1/models/any"],
  ["GET", "/api/v1/nodes"],
  ["GET", "/api/v1/tokens"],
  ["POST", "/api/v1/tokens"],
  ["GET", "/api/v1/events"],
  ["GET", "/api/v1/audit"],
  ["GET", "/api/v1/gateway/keys"],
  ["GET", "/api/v1/usage"],
  ["GET", "/api/v1/no-such-route"],
];

describe("an answer to a caller without a token", () => {
  it("says how to get a token, and never where the server keeps its files", async () => {
    let unauthorized = 0;
    for (const [method, url] of asked) {
      for (const headers of [{}, { authorization: "Bearer llmgw-wrong" }]) {
        const response = await request(`${server.url}${url}`, { method: method as "GET" | "POST", headers: { ...headers, "content-type": "application/json" }, body: method === "POST" ? "{}" : undefined });
        const text = await response.body.text();
        expect(text, `${method} ${url}`).not.toContain(dataDir);
        expect(text, `${method} ${url}`).not.toContain("admin-token");
        if (response.statusCode !== 401) continue;
        unauthorized += 1;
        const body = JSON.parse(text) as { error: { code: string; hint: string } };
        expect(body.error.code).toBe("unauthorized");
        expect(body.error.hint).toContain("operator");
        expect(body.error.hint).toContain("ctl token create");
      }
    }
    expect(unauthorized).toBeGreaterThanOrEqual(asked.length);
  });
});
