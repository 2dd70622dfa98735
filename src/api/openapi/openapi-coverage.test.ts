import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type RunningServer } from "../../server/start-server.js";
import { openApiPath } from "./build-openapi.js";

let dataDir: string;
let server: RunningServer;

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), "llmgw-openapi-test-"));
  server = await startServer({ dataDir, listen: "127.0.0.1:0", logger: false });
});

afterAll(async () => {
  await server.close();
  await rm(dataDir, { recursive: true, force: true });
});

interface Document {
  openapi: string;
  paths: Record<string, Record<string, { requestBody?: unknown; parameters?: { name: string; in: string }[]; security?: unknown[] }>>;
}

async function served(): Promise<Document> {
  const answer = await fetch(`${server.url}/api/v1/openapi.json`);
  expect(answer.status, "the document needs no token").toBe(200);
  return (await answer.json()) as Document;
}

describe("GET /api/v1/openapi.json", () => {
  it("describes every /api/v1 route the server registered: a route without config.api is missing from it", async () => {
    const document = await served();
    const routes = server.app.registeredRoutes.filter((route) => route.url.startsWith("/api/v1/"));
    expect(routes.length).toBeGreaterThan(40);
    const missing = routes.filter((route) => document.paths[openApiPath(route.url)]?.[route.method.toLowerCase()] === undefined).map((route) => `${route.method} ${route.url}`);
    expect(missing, "routes to describe with config: { api: { summary, body?, query? } } beside the route").toEqual([]);
  });

  it("is OpenAPI 3.1 with the bodies and queries the routes validate with", async () => {
    const document = await served();
    expect(document.openapi).toBe("3.1.0");
    const scale = document.paths["/api/v1/models/{name}/scale"]?.post;
    expect(JSON.stringify(scale?.requestBody)).toContain("idle_timeout");
    expect(scale?.parameters).toEqual([expect.objectContaining({ name: "name", in: "path" })]);
    const usage = document.paths["/api/v1/usage"]?.get;
    expect(usage?.parameters?.map((parameter) => parameter.name).sort()).toEqual(["cursor", "key", "limit", "model", "q", "since"]);
    // Every list a console pages through shows its paging parameters, with what each does.
    for (const list of ["/api/v1/models", "/api/v1/nodes", "/api/v1/replicas", "/api/v1/events", "/api/v1/audit", "/api/v1/keys", "/api/v1/gateway/keys", "/api/v1/usage"]) {
      const parameters = document.paths[list]?.get?.parameters ?? [];
      for (const name of ["limit", "cursor", "q"]) expect(parameters.find((parameter) => parameter.name === name), `${list} ${name}`).toMatchObject({ in: "query", required: false, description: expect.any(String) });
    }
    expect(document.paths["/api/v1/version"]?.get?.security).toEqual([]);
  });

  it("answers a request outside a body schema the way the document says it is refused", async () => {
    const token = server.createdAdminToken?.token as string;
    const answer = await fetch(`${server.url}/api/v1/models/x/scale`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ minimum: 1 }),
    });
    expect(answer.status).toBe(400);
    const document = await served();
    const body = JSON.stringify(document.paths["/api/v1/models/{name}/scale"]?.post?.requestBody);
    expect(body).not.toContain("minimum\":{");
    expect(body).toContain("\"additionalProperties\":false");
  });
});
