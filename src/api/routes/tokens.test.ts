import { randomUUID } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { temporaryDirectory } from "../../../test/support/temporary-directory.js";
import { openStore, type Store } from "../../store/open-store.js";
import { insertToken } from "../../store/token-rows.js";
import { CatalogService } from "../../services/catalog-service.js";
import { buildApp } from "../../server/build-app.js";
import { hashToken, newToken } from "../../auth/tokens.js";

describe("admin-API tokens", () => {
  let store: Store;
  let app: FastifyInstance;
  const admin = newToken("admin");
  const as = (token: string) => ({ authorization: `Bearer ${token}` });

  beforeAll(async () => {
    store = await openStore({ database: undefined, dataDir: temporaryDirectory("llmgw-tokens-") });
    await insertToken(store.db, { id: randomUUID(), name: "admin", role: "admin", hash: hashToken(admin) }, new Date().toISOString());
    app = await buildApp({ store, catalog: new CatalogService(store, [], "server.yaml"), adminTokenHint: "see admin-token" });
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  it("creates a read token that reads but cannot change, shown once and listed without its value", async () => {
    const created = await app.inject({ method: "POST", url: "/api/v1/tokens", headers: as(admin), payload: { name: "grafana" } });
    expect(created.statusCode).toBe(201);
    const { token, role } = created.json() as { token: string; role: string };
    expect(role).toBe("read");
    expect((await app.inject({ method: "GET", url: "/api/v1/models", headers: as(token) })).statusCode).toBe(200);
    const change = await app.inject({ method: "POST", url: "/api/v1/models", headers: as(token), payload: { name: "x", profiles: [{ engine: "vllm", source: "x" }] } });
    expect(change.statusCode).toBe(403);
    expect((await app.inject({ method: "GET", url: "/api/v1/tokens", headers: as(token) })).statusCode).toBe(403);

    const listed = await app.inject({ method: "GET", url: "/api/v1/tokens", headers: as(admin) });
    expect(listed.json().tokens.map((entry: { name: string; role: string }) => [entry.name, entry.role])).toEqual([
      ["admin", "admin"],
      ["grafana", "read"],
    ]);
    const everything = listed.body + (await app.inject({ method: "GET", url: "/api/v1/audit", headers: as(admin) })).body;
    expect(everything).not.toContain(token);
    expect(everything).toContain('"action":"token-created"');
  });

  it("revokes a token at once", async () => {
    const { token } = (await app.inject({ method: "POST", url: "/api/v1/tokens", headers: as(admin), payload: { name: "short-lived" } })).json() as { token: string };
    expect((await app.inject({ method: "GET", url: "/api/v1/models", headers: as(token) })).statusCode).toBe(200);
    expect((await app.inject({ method: "DELETE", url: "/api/v1/tokens/short-lived", headers: as(admin) })).json()).toEqual({ revoked: "short-lived" });
    expect((await app.inject({ method: "GET", url: "/api/v1/models", headers: as(token) })).statusCode).toBe(401);
  });

  it("refuses a duplicate name, an unknown token, a bad role, and revoking the last admin token", async () => {
    const duplicate = await app.inject({ method: "POST", url: "/api/v1/tokens", headers: as(admin), payload: { name: "grafana" } });
    expect([duplicate.statusCode, duplicate.json().error.code]).toEqual([409, "name_taken"]);
    const unknown = await app.inject({ method: "DELETE", url: "/api/v1/tokens/ghost", headers: as(admin) });
    expect([unknown.statusCode, unknown.json().error.code]).toEqual([404, "token_not_found"]);
    const role = await app.inject({ method: "POST", url: "/api/v1/tokens", headers: as(admin), payload: { name: "x", role: "root" } });
    expect(role.json().error.message).toContain("role: admin (may change things) or read (may only read)");
    const last = await app.inject({ method: "DELETE", url: "/api/v1/tokens/admin", headers: as(admin) });
    expect([last.statusCode, last.json().error.code]).toEqual([409, "last_admin_token"]);
    expect(last.json().error.hint).toContain("Create another admin token first");
    // With a second admin, the first may go.
    const second = (await app.inject({ method: "POST", url: "/api/v1/tokens", headers: as(admin), payload: { name: "admin-2", role: "admin" } })).json() as { token: string };
    expect((await app.inject({ method: "DELETE", url: "/api/v1/tokens/admin", headers: as(second.token) })).statusCode).toBe(200);
    expect((await app.inject({ method: "GET", url: "/api/v1/models", headers: as(admin) })).statusCode).toBe(401);
  });
});
