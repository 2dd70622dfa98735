import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import type { FastifyInstance } from "fastify";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mutationsOf, validHeartbeat, validJoin } from "../../../bench/fuzz/mutations.js";
import { hashToken, newToken } from "../../auth/tokens.js";
import { agentPaths } from "../../protocol/agent-protocol.js";
import { buildApp } from "../../server/build-app.js";
import { CatalogService } from "../../services/catalog-service.js";
import { FleetService } from "../../services/fleet-service.js";
import { openStore, type Store } from "../../store/open-store.js";
import { listEvents } from "../../store/reconcile-rows.js";
import { insertToken } from "../../store/token-rows.js";
import { waitFor } from "../../../test/support/fake-engine.js";

/** What a node holding a valid credential can send, treated as the outside input it is. */
describe("agent input at the admin API's door", () => {
  let directory: string;
  let store: Store;
  let app: FastifyInstance;
  let joinToken: string;
  let credential: string;
  const admin = newToken("admin");
  const as = { authorization: `Bearer ${admin}` };
  const base = () => ({ joinToken, nodeName: "node-a", address: "http://10.0.0.5:7070" });

  beforeAll(async () => {
    directory = await mkdtemp(path.join(tmpdir(), "llmgw-agent-input-"));
    store = await openStore({ database: undefined, dataDir: directory });
    await insertToken(store.db, { id: randomUUID(), name: "admin", role: "admin", hash: hashToken(admin) }, new Date().toISOString());
    const catalog = new CatalogService(store, [], "server.yaml");
    const fleet = new FleetService(store, catalog, { heartbeatDeadlineMs: 15_000, settlingWindowMs: 20_000, heartbeatIntervalMs: 2000, gpuMemoryUtilization: 0.9, serverEnvironment: process.env });
    app = await buildApp({ store, catalog, fleetService: fleet, adminTokenHint: "see admin-token" });
    const created = await app.inject({ method: "POST", url: "/api/v1/models", headers: as, payload: { name: "fuzz-model", profiles: [{ engine: "vllm", source: "hf://org/m@main", gpus: 1 }] } });
    expect(created.statusCode).toBe(201);
    joinToken = (await app.inject({ method: "POST", url: "/api/v1/node-tokens", headers: as, payload: {} })).json<{ token: string }>().token;
    const joined = await app.inject({ method: "POST", url: agentPaths.join, payload: validJoin(base()) as object });
    expect(joined.statusCode).toBe(200);
    credential = joined.json<{ credential: string }>().credential;
  });

  afterAll(async () => {
    await app.close();
    await store.close();
    await rm(directory, { recursive: true, force: true });
  });

  const beat = (payload: unknown, token = credential) => app.inject({ method: "POST", url: agentPaths.heartbeat, headers: { authorization: `Bearer ${token}` }, payload: payload as object });

  const viewsStillAnswer = async () => {
    for (const url of ["/api/v1/models", "/api/v1/nodes", "/api/v1/replicas", "/api/v1/nodes/node-a", "/api/v1/models/fuzz-model"]) {
      const answer = await app.inject({ method: "GET", url, headers: as });
      expect({ url, status: answer.statusCode }).toEqual({ url, status: 200 });
    }
  };

  it("refuses a join body of {} as invalid input naming the fields, not as another protocol version", async () => {
    const answer = await app.inject({ method: "POST", url: agentPaths.join, payload: {} });
    expect(answer.statusCode).toBe(400);
    expect(answer.json()).toMatchObject({ error: { code: "invalid_input", message: expect.stringContaining("protocol") } });
  });

  it("refuses a message that names another protocol version with both versions", async () => {
    const answer = await app.inject({ method: "POST", url: agentPaths.join, payload: { ...(validJoin(base()) as object), protocol: 2 } });
    expect(answer.json()).toMatchObject({ error: { code: "version_unsupported", message: expect.stringContaining("speaks agent protocol 1; the agent sent protocol 2") } });
  });

  it("refuses a replica endpoint that is not an http URL on the node, and the views keep answering", async () => {
    for (const endpoint of ["not a url", "file:///etc/passwd", "http://evil.example:41000"]) {
      const body = validHeartbeat(base()) as { replicas: { endpoint?: string }[] };
      body.replicas[0] = { ...body.replicas[0], endpoint };
      const answer = await beat(body);
      expect({ endpoint, status: answer.statusCode, code: answer.json<{ error: { code: string } }>().error.code }).toEqual({ endpoint, status: 400, code: "invalid_input" });
    }
    const onNode = validHeartbeat(base()) as { replicas: { endpoint?: string }[] };
    onNode.replicas[0] = { ...onNode.replicas[0], endpoint: "http://10.0.0.5:41000" };
    expect((await beat(onNode)).statusCode).toBe(200);
    await viewsStillAnswer();
  });

  it("answers an unauthenticated heartbeat the same for a known and an unknown node name", async () => {
    const known = await beat(validHeartbeat(base()), "llmgw_node_forged");
    const unknown = await beat(validHeartbeat({ ...base(), nodeName: "node-zz" }), "llmgw_node_forged");
    expect([known.statusCode, unknown.statusCode]).toEqual([401, 401]);
    expect(unknown.body.replaceAll("node-zz", "NAME")).toBe(known.body.replaceAll("node-a", "NAME"));
  });

  it("refuses a model or replica name holding a control character, naming the field", async () => {
    for (const model of ["\t", "tiny\nready", "x\u0000"]) {
      const body = validHeartbeat(base()) as { replicas: { model: string }[] };
      body.replicas[0] = { ...body.replicas[0]!, model };
      const answer = await beat(body);
      expect(answer.statusCode).toBe(400);
      expect(answer.json()).toMatchObject({ error: { code: "invalid_input", message: expect.stringMatching(/replicas\[0\]\.model: .*control character/s) } });
    }
    const badId = validHeartbeat(base()) as { replicas: { id: string }[] };
    badId.replicas[0] = { ...badId.replicas[0]!, id: "a\tb" };
    expect((await beat(badId)).statusCode).toBe(400);
  });

  it("stops a replica the server never placed instead of listing it, and says so in an event", async () => {
    const stops: string[] = [];
    const agentApi = http.createServer((request, response) => {
      if (request.method === "DELETE") stops.push(request.url ?? "");
      response.writeHead(202, { "content-type": "application/json" }).end(JSON.stringify({ protocol: 1, replica: null }));
    });
    await new Promise<void>((resolve) => agentApi.listen(0, "127.0.0.1", resolve));
    try {
      const address = `http://127.0.0.1:${(agentApi.address() as AddressInfo).port}`;
      const joined = await app.inject({ method: "POST", url: agentPaths.join, payload: validJoin({ ...base(), nodeName: "node-o", address }) as object });
      const orphanCredential = joined.json<{ credential: string }>().credential;
      const since = new Date().toISOString();
      const invented = { id: "invented-1", model: "no-such-model", profile: "default", engine: "vllm", cards: [0], state: "ready", endpoint: "http://127.0.0.1:41999", since };
      const answer = await beat({ protocol: 1, name: "node-o", address, replicas: [invented] }, orphanCredential);
      expect(answer.statusCode).toBe(200);
      const replicas = (await app.inject({ method: "GET", url: "/api/v1/replicas", headers: as })).json<{ replicas: { id: string }[] }>().replicas;
      expect(replicas.map((replica) => replica.id)).not.toContain("invented-1");
      await waitFor(() => stops.length > 0, 10_000, "the stop sent to the agent");
      expect(stops).toEqual(["/agent/v1/replicas/invented-1"]);
      const events = await listEvents(store.db, { limit: 1000 });
      expect(events.filter((event) => event.replica === "invented-1")).toEqual([
        expect.objectContaining({ kind: "replica-orphan-stopped", node: "node-o", message: expect.stringContaining("never placed there") }),
      ]);
    } finally {
      agentApi.closeAllConnections();
      await new Promise<void>((resolve) => agentApi.close(() => resolve()));
    }
  });

  it("never fails with a 500 on any join or heartbeat body, and the stored state stays readable", async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(mutationsOf(validJoin({ ...base(), nodeName: "node-j" })).map((body) => ["join", body] as const), mutationsOf(validHeartbeat(base())).map((body) => ["beat", body] as const)), async ([kind, body]) => {
        const answer = kind === "join" ? await app.inject({ method: "POST", url: agentPaths.join, payload: JSON.stringify(body), headers: { "content-type": "application/json" } }) : await beat(JSON.stringify(body));
        expect(answer.statusCode, answer.body).toBeLessThan(500);
      }),
      { numRuns: 300 },
    );
    await viewsStillAnswer();
  });
});
