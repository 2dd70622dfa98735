import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type RunningServer } from "../server/start-server.js";
import { admin } from "./admin-calls.js";
import { adminPath, adminRoutes } from "./admin-routes.js";

let dataDir: string;
let server: RunningServer;

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), "llmgw-admin-routes-test-"));
  server = await startServer({ dataDir, listen: "127.0.0.1:0", logger: false });
});

afterAll(async () => {
  await server.close();
  await rm(dataDir, { recursive: true, force: true });
});

async function servedPaths(): Promise<Record<string, Record<string, unknown>>> {
  const answer = await fetch(`${server.url}${adminPath("openapi", {})}`);
  expect(answer.status).toBe(200);
  return ((await answer.json()) as { paths: Record<string, Record<string, unknown>> }).paths;
}

describe("the admin API client's routes", () => {
  it("are each in the OpenAPI document the server serves, with the same method", async () => {
    const paths = await servedPaths();
    // The document describes itself too; every other route the clients call must be there.
    const missing = Object.entries(adminRoutes)
      .filter(([name, route]) => name !== "openapi" && paths[route.path]?.[route.method.toLowerCase()] === undefined)
      .map(([name, route]) => `${name}: ${route.method} ${route.path}`);
    expect(missing, "routes the console or ctl call that the server does not serve").toEqual([]);
  });

  it("fill in each path parameter encoded, and leave empty query values out", () => {
    expect(adminPath("removeAdapter", { name: "Qwen/Qwen2.5-7B", adapter: "sql tuned" })).toBe("/api/v1/models/Qwen%2FQwen2.5-7B/adapters/sql%20tuned");
    expect(adminPath("replicas", {}, { model: "chat", state: undefined, node: "", limit: 2 })).toBe("/api/v1/replicas?model=chat&limit=2");
    expect(admin.stopReplica("r-1", true)).toEqual({ method: "DELETE", path: "/api/v1/replicas/r-1?drain=1" });
    expect(admin.scale("chat", { min: 1 })).toEqual({ method: "POST", path: "/api/v1/models/chat/scale", body: { min: 1 } });
  });

  it("answer through a real server: a call built here is one the server takes", async () => {
    const token = server.createdAdminToken?.token as string;
    const call = admin.models();
    const answer = await fetch(`${server.url}${call.path}`, { method: call.method, headers: { authorization: `Bearer ${token}` } });
    expect(answer.status).toBe(200);
    expect(await answer.json()).toMatchObject({ models: [] });
  });
});
