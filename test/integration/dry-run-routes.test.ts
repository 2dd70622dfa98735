import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAgent, type RunningAgent } from "../../src/agent/agent.js";
import { routesOf } from "../../src/api/dry-run.js";
import { shippedPresets } from "../../src/catalog/presets/shipped-presets.js";
import { dryRunAnswerSchema } from "../../src/protocol/dry-run.js";
import type { ReplicaView } from "../../src/protocol/views.js";
import { startServer, type RunningServer } from "../../src/server/start-server.js";
import { serverYaml } from "../support/cluster.js";
import { killGroup, waitFor, writeFakeEngine } from "../support/fake-engine.js";

/**
 * Change routes that refuse `?dry_run` on purpose, each with why. A change
 * route added without dry-run support fails the first test until it either
 * honours one or is named here.
 */
const refusing: Record<string, string> = {
  "POST /api/v1/agent/join": "the agents' own protocol: an agent never asks for a dry run",
  "POST /api/v1/agent/heartbeat": "the agents' own protocol",
  "POST /api/v1/gateway/usage": "the gateways' feed of counts, not an operator's change",
  "POST /api/v1/gateway/series": "the gateways' feed of latency and traffic steps, not an operator's change",
  "POST /api/v1/gateway/arms": "the gateways' feed of arm counts",
  "POST /api/v1/replicas": "a hand start is placed and sent to the agent in one step; it refuses a dry run rather than start",
};

interface Sample {
  readonly url: string;
  readonly payload?: Record<string, unknown>;
  /** The dry run is accepted (200); otherwise it must refuse exactly as the real call does. */
  readonly accepted: boolean;
}

describe("?dry_run=true on every change route of the admin API", () => {
  let directory: string;
  let server: RunningServer;
  let agent: RunningAgent;
  let headers: Record<string, string>;
  let replica: ReplicaView;
  // A preset one 2-card node can hold: the first shipped one (deepseek-v3) fits nowhere here and is refused, dry run or not.
  const preset = shippedPresets().find((shipped) => shipped.name === "qwen2.5-7b-instruct")?.name ?? "none";

  beforeAll(async () => {
    directory = await mkdtemp(path.join(tmpdir(), "llmgw-dry-run-"));
    const engineScript = await writeFakeEngine(directory);
    await writeFile(path.join(directory, "server.yaml"), serverYaml);
    server = await startServer({ configPath: path.join(directory, "server.yaml"), dataDir: path.join(directory, "server"), listen: "127.0.0.1:0", logger: false });
    headers = { authorization: `Bearer ${server.createdAdminToken?.token ?? ""}` };
    const joinToken = (await server.app.inject({ method: "POST", url: "/api/v1/node-tokens", headers, payload: {} })).json<{ token: string }>().token;
    agent = await startAgent({
      server: server.url,
      joinToken,
      name: "node-a",
      dataDirectory: path.join(directory, "node-a"),
      simulate: "2xH100-80GB@nvl0,cpu:16c/64g",
      llmgwCommand: [process.execPath, engineScript],
      healthPollMs: 100,
      stopGraceMs: 2000,
      logger: pino({ level: "silent" }),
    });
    const added = await server.app.inject({
      method: "POST",
      url: "/api/v1/models?source_check=false",
      headers,
      payload: { name: "tiny", context: 4096, profiles: [{ engine: "vllm", source: "hf://org/tiny@main", gpu_class: "h100", gpus: 1 }] },
    });
    expect(added.statusCode).toBe(201);
    [replica] = await waitFor(async () => {
      const list = (await server.app.inject({ method: "GET", url: "/api/v1/replicas?model=tiny", headers })).json<{ replicas: ReplicaView[] }>().replicas;
      return list.length === 1 && list[0]?.state === "ready" ? list : undefined;
    }, 30_000, "tiny's replica to be ready") as [ReplicaView];
    // The pass after ready writes replica-ready; the state compared below starts after it.
    await waitFor(async () => (await get("/api/v1/events?model=tiny")).events.some((event: { kind: string }) => event.kind === "replica-ready"), 10_000, "replica-ready");
  }, 60_000);

  afterAll(async () => {
    const groups = agent?.supervisor.persisted().map((record) => record.process_group) ?? [];
    await agent?.close();
    for (const group of groups) killGroup(group);
    await server?.close();
    await rm(directory, { recursive: true, force: true });
  });

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- read back as the API answers, compared whole
  const get = async (url: string): Promise<any> => (await server.app.inject({ method: "GET", url, headers })).json();

  /** Everything a change could write, as the API shows it (heartbeat times left out: they move by themselves). */
  async function state() {
    const [models, nodes, replicas, tokens, keys, audit, events, canaries] = await Promise.all([
      get("/api/v1/models"),
      get("/api/v1/nodes"),
      get("/api/v1/replicas"),
      get("/api/v1/tokens"),
      get("/api/v1/keys"),
      get("/api/v1/audit?limit=1000"),
      get("/api/v1/events?limit=1000"),
      get("/api/v1/canaries"),
    ]);
    return {
      models,
      nodes: nodes.nodes.map((node: { name: string; cordoned: boolean; draining: boolean }) => [node.name, node.cordoned, node.draining]),
      replicas: replicas.replicas.map((each: ReplicaView) => [each.id, each.state, each.gpus]),
      tokens,
      keys,
      audit,
      events,
      canaries,
    };
  }

  const samples = (): Record<string, Sample> => ({
    "POST /api/v1/models": { url: "/api/v1/models?source_check=false", payload: { name: "other", profiles: [{ engine: "vllm", source: "hf://org/other@main", gpu_class: "h100", gpus: 1 }] }, accepted: true },
    "DELETE /api/v1/models/:name": { url: "/api/v1/models/tiny", accepted: true },
    "POST /api/v1/models/:name/scale": { url: "/api/v1/models/tiny/scale", payload: { min: 2 }, accepted: true },
    "POST /api/v1/models/:name/resources": { url: "/api/v1/models/tiny/resources", payload: { memory_gb: 8 }, accepted: true },
    "POST /api/v1/models/:name/class": { url: "/api/v1/models/tiny/class", payload: { class: "critical" }, accepted: true },
    "POST /api/v1/models/:name/owner": { url: "/api/v1/models/tiny/owner", payload: { owner: "data-team" }, accepted: true },
    "POST /api/v1/models/:name/target": { url: "/api/v1/models/tiny/target", payload: { in_flight: 4 }, accepted: true },
    "POST /api/v1/models/:name/fallbacks": { url: "/api/v1/models/tiny/fallbacks", payload: { fallbacks: ["nothing-here"] }, accepted: false },
    // Checked against the model's own files, which this machine cannot read: refused as the real call is.
    "POST /api/v1/models/:name/context": { url: "/api/v1/models/tiny/context", payload: { context: 8192 }, accepted: false },
    "POST /api/v1/models/:name/gpus": { url: "/api/v1/models/tiny/gpus", payload: { gpus: 3 }, accepted: false },
    "POST /api/v1/models/:name/restart": { url: "/api/v1/models/tiny/restart", payload: {}, accepted: true },
    "POST /api/v1/models/:name/demand": { url: "/api/v1/models/tiny/demand", payload: {}, accepted: true },
    "POST /api/v1/nodes/:name/cordon": { url: "/api/v1/nodes/node-a/cordon", payload: {}, accepted: true },
    "POST /api/v1/nodes/:name/uncordon": { url: "/api/v1/nodes/node-a/uncordon", payload: {}, accepted: true },
    "POST /api/v1/nodes/:name/drain": { url: "/api/v1/nodes/node-a/drain", payload: {}, accepted: true },
    "POST /api/v1/models/:name/origin": { url: "/api/v1/models/tiny/origin", payload: { origin: "hf://org/tiny@v2" }, accepted: true },
    "POST /api/v1/models/:name/rollback": { url: "/api/v1/models/tiny/rollback", payload: {}, accepted: false },
    "POST /api/v1/models/:name/update": { url: "/api/v1/models/nothing-here/update", payload: {}, accepted: false },
    "POST /api/v1/models/:name/adapters": { url: "/api/v1/models/nothing-here/adapters", payload: { name: "sql", source: "hf://org/sql-lora@main" }, accepted: false },
    "DELETE /api/v1/models/:name/adapters/:adapter": { url: "/api/v1/models/tiny/adapters/sql", accepted: false },
    "POST /api/v1/models/:name/canary": { url: "/api/v1/models/tiny/canary", payload: { to: "v2", weight: 10 }, accepted: true },
    "POST /api/v1/models/:name/canary/gate": { url: "/api/v1/models/tiny/canary/gate", payload: { min_requests: 10, max_error_rate: 0.1 }, accepted: false },
    "POST /api/v1/models/:name/canary/promote": { url: "/api/v1/models/tiny/canary/promote", payload: {}, accepted: false },
    "POST /api/v1/models/:name/canary/abort": { url: "/api/v1/models/tiny/canary/abort", payload: {}, accepted: false },
    "POST /api/v1/node-tokens": { url: "/api/v1/node-tokens", payload: {}, accepted: true },
    "DELETE /api/v1/replicas/:id": { url: `/api/v1/replicas/${replica.id}`, accepted: true },
    "POST /api/v1/models/:name/pull": { url: "/api/v1/models/tiny/pull", payload: {}, accepted: true },
    "POST /api/v1/tokens": { url: "/api/v1/tokens", payload: { name: "ci-bot" }, accepted: true },
    "DELETE /api/v1/tokens/:name": { url: "/api/v1/tokens/admin", accepted: false },
    "POST /api/v1/keys": { url: "/api/v1/keys", payload: { name: "data-team", models: ["tiny"], rpm: 60 }, accepted: true },
    "DELETE /api/v1/keys/:name": { url: "/api/v1/keys/nothing-here", accepted: false },
    "POST /api/v1/catalog/import": {
      url: "/api/v1/catalog/import",
      payload: { version: 1, models: [{ name: "imported", external: { base_url: "http://127.0.0.1:9/v1" } }], versions: [], keys: [{ name: "moved", models: null, rpm: 10, tpm: null, expires_at: null, revoked_at: null }], tokens: [{ name: "grafana", role: "read" }] },
      accepted: true,
    },
    "POST /api/v1/presets/:name": { url: `/api/v1/presets/${preset}?source_check=false`, payload: { name: "from-preset" }, accepted: true },
  });

  const changeRoutes = () =>
    routesOf(server.app).filter((route) => (route.method === "POST" || route.method === "DELETE" || route.method === "PUT" || route.method === "PATCH") && !route.url.startsWith("/v1"));

  it("is honoured by every change route, or refused on purpose by the few named here", () => {
    const key = (route: { method: string; url: string }) => `${route.method} ${route.url}`;
    const routes = changeRoutes();
    expect(routes.length).toBeGreaterThan(30);
    const unaccounted = routes.filter((route) => !route.dryRun && refusing[key(route)] === undefined).map(key);
    expect(unaccounted).toEqual([]);
    const untested = routes.filter((route) => route.dryRun && samples()[key(route)] === undefined).map(key);
    expect(untested).toEqual([]);
  });

  it("answers each dry run as the contract says and writes nothing; a refusal reads as the real call's", async () => {
    const before = await state();
    for (const [route, sample] of Object.entries(samples())) {
      const method = route.split(" ")[0] as "POST" | "DELETE";
      const dry = await server.app.inject({ method, url: `${sample.url}${sample.url.includes("?") ? "&" : "?"}dry_run=true`, headers, ...(sample.payload !== undefined ? { payload: sample.payload } : {}) });
      if (sample.accepted) {
        expect(dry.statusCode, `${route}: ${dry.body}`).toBe(200);
        const answer = dryRunAnswerSchema.parse(dry.json());
        expect(answer.outcome, route).toBeDefined();
      } else {
        expect(dry.statusCode, `${route}: ${dry.body}`).toBeGreaterThanOrEqual(400);
        expect(dry.json().error.code, route).not.toBe("dry_run_unsupported");
        const real = await server.app.inject({ method, url: sample.url, headers, ...(sample.payload !== undefined ? { payload: sample.payload } : {}) });
        expect({ status: real.statusCode, body: real.json() }, route).toEqual({ status: dry.statusCode, body: dry.json() });
      }
    }
    // The reconciler may pass meanwhile: it finds nothing to do, since nothing changed.
    expect(await state()).toEqual(before);
  });

  it("names what the reconciler would do: a scale places a replica on the free card, a removal stops the running one", async () => {
    const scaled = dryRunAnswerSchema.parse((await server.app.inject({ method: "POST", url: "/api/v1/models/tiny/scale?dry_run=1", headers, payload: { min: 2 } })).json());
    expect(scaled.outcome).toMatchObject({ name: "tiny", scaling: { min: 2 } });
    const start = scaled.changes.find((change) => change.kind === "replica-start");
    expect(start).toMatchObject({ model: "tiny", node: "node-a", class: "standard" });
    expect(start?.cards).toHaveLength(1);
    expect(start?.cards).not.toEqual(replica.gpus);
    expect(start?.engine_args).toEqual(expect.arrayContaining(["--max-model-len", "4096"]));
    expect(scaled.changes[0]).toMatchObject({ kind: "catalog-write", model: "tiny" });

    const removed = dryRunAnswerSchema.parse((await server.app.inject({ method: "DELETE", url: "/api/v1/models/tiny?dry_run=true", headers })).json());
    expect(removed.changes.map((change) => [change.kind, change.replica])).toEqual([
      ["catalog-write", undefined],
      ["replica-stop", replica.id],
    ]);
  });

  it("shows a surge restart starting the new replica beside the old, and --in-place stopping the old one first", async () => {
    const surge = dryRunAnswerSchema.parse((await server.app.inject({ method: "POST", url: "/api/v1/models/tiny/restart?dry_run=true", headers, payload: {} })).json());
    expect(surge.changes.map((change) => change.kind)).toEqual(["replica-start", "replica-restart"]);
    expect(surge.changes[0]?.cards).not.toEqual(replica.gpus);
    const inPlace = dryRunAnswerSchema.parse((await server.app.inject({ method: "POST", url: "/api/v1/models/tiny/restart?dry_run=true", headers, payload: { in_place: true } })).json());
    expect(inPlace.changes.map((change) => change.kind)).toEqual(["replica-restart", "replica-start"]);
    // Stopped first, so its replacement may take the same card.
    expect(inPlace.changes[1]).toMatchObject({ node: "node-a" });
    expect(inPlace.outcome).toMatchObject({ model: "tiny", in_place: true, replicas: 1 });
  });

  it("refuses a dry_run that is neither true nor 1, naming the parameter, and a dry run on a route that cannot do one", async () => {
    const odd = await server.app.inject({ method: "POST", url: "/api/v1/models/tiny/scale?dry_run=yes", headers, payload: { min: 2 } });
    expect(odd.statusCode).toBe(400);
    expect(odd.json().error).toMatchObject({ code: "invalid_input", message: "query: dry_run: true or 1 (leave it out for a real change)" });
    const hand = await server.app.inject({ method: "POST", url: "/api/v1/replicas?dry_run=true", headers, payload: { model: "tiny", node: "node-a" } });
    expect(hand.statusCode).toBe(400);
    expect(hand.json().error).toMatchObject({ code: "dry_run_unsupported", message: "POST /api/v1/replicas cannot do a dry run; nothing was changed" });
    expect((await get("/api/v1/replicas?model=tiny")).replicas).toHaveLength(1);
  });
});
