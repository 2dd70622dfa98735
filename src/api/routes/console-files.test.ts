import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { gzipSync, brotliCompressSync, gunzipSync, brotliDecompressSync } from "node:zlib";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { temporaryDirectory } from "../../../test/support/temporary-directory.js";
import { insertApiTokens } from "../../../test/support/api-tokens.js";
import { openStore, type Store } from "../../store/open-store.js";
import { CatalogService } from "../../services/catalog-service.js";
import { buildApp } from "../../server/build-app.js";
import { sessionViewSchema } from "../../protocol/console.js";

const indexHtml = '<!doctype html><html><head><script type="module" src="/assets/index-abc123.js"></script></head><body><div id="root"></div></body></html>';
const script = `console.log(${JSON.stringify("x".repeat(2000))});`;

/** A console as Vite builds it: index.html, hashed assets with .br and .gz beside them, and a plain file at the root. */
function builtConsole(): string {
  const directory = path.join(temporaryDirectory("llmgw-console-"), "console");
  mkdirSync(path.join(directory, "assets"), { recursive: true });
  writeFileSync(path.join(directory, "index.html"), indexHtml);
  writeFileSync(path.join(directory, "assets", "index-abc123.js"), script);
  writeFileSync(path.join(directory, "assets", "index-abc123.js.br"), brotliCompressSync(script));
  writeFileSync(path.join(directory, "assets", "index-abc123.js.gz"), gzipSync(script));
  writeFileSync(path.join(directory, "favicon.svg"), "<svg xmlns='http://www.w3.org/2000/svg'/>");
  writeFileSync(path.join(directory, ".env"), "SECRET=1");
  writeFileSync(path.join(directory, "..", "outside.txt"), "OUTSIDE");
  return directory;
}

describe("the web console's files", () => {
  let store: Store;
  let app: FastifyInstance;
  let bare: FastifyInstance;
  let tokens: Awaited<ReturnType<typeof insertApiTokens>>;

  beforeAll(async () => {
    store = await openStore({ database: undefined, dataDir: temporaryDirectory("llmgw-console-store-") });
    tokens = await insertApiTokens(store);
    const catalog = new CatalogService(store, [], "server.yaml");
    app = await buildApp({ store, catalog, adminTokenHint: "see admin-token", consoleDirectory: builtConsole() });
    bare = await buildApp({ store, catalog, adminTokenHint: "see admin-token", consoleDirectory: temporaryDirectory("llmgw-console-unbuilt-") });
  });
  afterAll(async () => {
    await app.close();
    await bare.close();
    await store.close();
  });

  it("answers / with index.html, without a token, not cached, under a policy with no inline script", async () => {
    const page = await app.inject({ method: "GET", url: "/" });
    expect(page.statusCode).toBe(200);
    expect(page.body).toBe(indexHtml);
    expect(page.headers["content-type"]).toContain("text/html");
    expect(page.headers["cache-control"]).toBe("no-cache");
    const policy = String(page.headers["content-security-policy"]);
    expect(policy).toContain("script-src 'self'");
    expect(policy).not.toMatch(/script-src[^;]*unsafe-inline/);
    expect(policy).toContain("connect-src 'self'");
    expect(policy).toContain("img-src 'self' data: blob:");
    expect(policy).toContain("frame-ancestors 'none'");
    expect(policy).toContain("default-src 'self'");
  });

  it("answers index.html for a page of the console's router, so a reload or a shared link opens it", async () => {
    for (const url of ["/models", "/models/qwen%2F7b", "/fleet?node=gpu-1", "/keys/", "/models/qwen2.5-7b-instruct"]) {
      const page = await app.inject({ method: "GET", url });
      expect([url, page.statusCode, page.body]).toEqual([url, 200, indexHtml]);
    }
  });

  it("sends hashed assets cached for a year, precompressed when the client accepts it", async () => {
    const plain = await app.inject({ method: "GET", url: "/assets/index-abc123.js" });
    expect([plain.statusCode, plain.body, plain.headers["content-encoding"]]).toEqual([200, script, undefined]);
    expect(plain.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
    expect(plain.headers["content-type"]).toContain("javascript");

    const brotli = await app.inject({ method: "GET", url: "/assets/index-abc123.js", headers: { "accept-encoding": "br, gzip" } });
    expect(brotli.headers["content-encoding"]).toBe("br");
    expect(brotli.headers["content-type"]).toContain("javascript");
    expect(brotliDecompressSync(brotli.rawPayload).toString()).toBe(script);

    const gzip = await app.inject({ method: "GET", url: "/assets/index-abc123.js", headers: { "accept-encoding": "gzip" } });
    expect(gzip.headers["content-encoding"]).toBe("gzip");
    expect(gunzipSync(gzip.rawPayload).toString()).toBe(script);
    expect(String(gzip.headers.vary).toLowerCase()).toContain("accept-encoding");
  });

  it("sends an unhashed file uncached, and a missing file, a dotfile or a path out of the folder as a 404", async () => {
    const icon = await app.inject({ method: "GET", url: "/favicon.svg" });
    expect([icon.statusCode, icon.headers["cache-control"]]).toEqual([200, "no-cache"]);
    expect((await app.inject({ method: "GET", url: "/assets/gone-123.js" })).statusCode).toBe(404);
    const dotfile = await app.inject({ method: "GET", url: "/.env" });
    expect(dotfile.body).not.toContain("SECRET");
    expect(dotfile.statusCode).toBeGreaterThanOrEqual(400);
    for (const url of ["/..%2Foutside.txt", "/assets/..%2F..%2Foutside.txt"]) {
      const escape = await app.inject({ method: "GET", url });
      expect(escape.statusCode).toBeGreaterThanOrEqual(400);
      expect(escape.body).not.toContain("OUTSIDE");
    }
  });

  it("keeps the API's answers: unknown API paths are 401 without a token and 404 with one, never the page", async () => {
    const noToken = await app.inject({ method: "GET", url: "/api/v1/no-such-thing" });
    expect([noToken.statusCode, noToken.json().error.code]).toEqual([401, "unauthorized"]);
    const withToken = await app.inject({ method: "GET", url: "/api/v1/no-such-thing", headers: tokens.as(tokens.reader) });
    expect([withToken.statusCode, withToken.json().error.code]).toEqual([404, "route_not_found"]);
    expect((await app.inject({ method: "GET", url: "/api/v1/models" })).statusCode).toBe(401);
    const v1 = await app.inject({ method: "GET", url: "/v1/nothing" });
    expect([v1.statusCode, v1.json().error.code]).toEqual([404, "route_not_found"]);
  });

  it("says how to build the console when dist/console has no index.html", async () => {
    const page = await bare.inject({ method: "GET", url: "/" });
    expect(page.statusCode).toBe(200);
    expect(page.headers["content-type"]).toContain("text/html");
    expect(page.body).toContain("npm run build");
    expect(page.headers["content-security-policy"]).toContain("script-src 'self'");
    expect((await bare.inject({ method: "GET", url: "/fleet" })).body).toContain("npm run build");
  });
});

describe("GET /api/v1/session", () => {
  let store: Store;
  let app: FastifyInstance;
  let tokens: Awaited<ReturnType<typeof insertApiTokens>>;

  beforeAll(async () => {
    store = await openStore({ database: undefined, dataDir: temporaryDirectory("llmgw-session-") });
    tokens = await insertApiTokens(store);
    app = await buildApp({ store, catalog: new CatalogService(store, [], "server.yaml"), adminTokenHint: "see admin-token" });
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  it("names the token in use and its role, admin or read", async () => {
    const admin = await app.inject({ method: "GET", url: "/api/v1/session", headers: tokens.as(tokens.admin) });
    expect(sessionViewSchema.parse(admin.json())).toEqual({ token: { name: "admin", role: "admin" } });
    const reader = await app.inject({ method: "GET", url: "/api/v1/session", headers: tokens.as(tokens.reader) });
    expect(reader.json()).toEqual({ token: { name: "dashboard", role: "read" } });
  });

  it("answers 401 without a token or with one it did not issue", async () => {
    expect((await app.inject({ method: "GET", url: "/api/v1/session" })).statusCode).toBe(401);
    expect((await app.inject({ method: "GET", url: "/api/v1/session", headers: { authorization: "Bearer nope" } })).statusCode).toBe(401);
  });
});
