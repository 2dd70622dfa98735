import type { Server } from "node:http";
import { rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { NodeView } from "../../src/protocol/views.js";
import { modelYaml, replicaIdentities, serverYaml, startCluster, type Cluster } from "../support/cluster.js";
import { waitFor } from "../support/fake-engine.js";
import { fakeOpenAIProvider, listenOnLoopback } from "../support/fake-openai-provider.js";
import { freePort, startServerProcess, type ServerProcess } from "../support/processes.js";
import { temporaryDirectory } from "../support/temporary-directory.js";
import { reportChaos } from "./chaos-report.js";
import { lostWithConnection, seconds, SteadyLoad, type LoadResult, type LoadRecord } from "./steady-load.js";

/**
 * kill -9 of a server on SQLite under a steady load through its gateway (half
 * streamed), and a start again on the same data directory and port: the
 * catalog and keys are intact, requests in the outage are refused at once
 * (never left hanging), the gateway serves again, and no answered request's
 * usage is missing (it is journalled before the answer's last byte).
 */
/** Requests before the kill, and again after the restart; the outage in between is paced, not counted. */
const phase = 100;

/**
 * Refused, not hung: every failure is a refused connection, or one cut under a request in flight at the kill
 * (a stream that had begun included: a dead server sends no error event), and none ended before the kill.
 */
function expectRefusedOrCutInTheOutage(records: readonly LoadRecord[], killedAt: number): void {
  const failed = records.filter((record) => !record.ok);
  expect(failed.filter((record) => !lostWithConnection(record)).map((record) => record.reason)).toEqual([]);
  for (const record of failed) expect(record.endedAt).toBeGreaterThanOrEqual(killedAt);
  for (const record of failed) if (record.chunks > 0) expect(record.startedAt).toBeLessThanOrEqual(killedAt);
}

describe("chaos: kill -9 the server (SQLite) and start it again", () => {
  let provider: Server | undefined;
  let server: ServerProcess | undefined;
  afterAll(async () => {
    await server?.stop();
    await new Promise((resolve) => provider?.close(resolve) ?? resolve(undefined));
  });

  it("keeps catalog and keys, refuses requests in the outage cleanly and serves again", async () => {
    provider = fakeOpenAIProvider();
    const providerPort = await listenOnLoopback(provider);
    const folder = temporaryDirectory("llmgw-chaos-server-");
    const config = path.join(folder, "server.yaml");
    writeFileSync(config, ["models:", "  - name: chat", `    external: { base_url: "http://127.0.0.1:${providerPort}/v1" }`, ""].join("\n"));
    const dataDir = path.join(folder, "data");
    const port = await freePort();
    const start = () => startServerProcess({ args: ["-c", config, "--listen", `127.0.0.1:${port}`], dataDir });
    server = await start();
    const token = server.token;
    const api = async (method: string, route: string, body?: unknown) => {
      const answer = await fetch(`http://127.0.0.1:${port}${route}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      if (answer.status >= 300) throw new Error(`${method} ${route}: ${answer.status} ${await answer.text()}`);
      return (await answer.json()) as unknown;
    };
    await api("POST", "/api/v1/models", { name: "extra", external: { base_url: `http://127.0.0.1:${providerPort}/v1` }, aliases: ["extra-latest"] });
    const { key } = (await api("POST", "/api/v1/keys", { name: "load", rpm: 100_000 })) as { key: string };
    const before = await api("GET", "/api/v1/catalog/export");

    const load = new SteadyLoad({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: key, model: "chat", concurrency: 4 });
    let result: LoadResult | undefined;
    let killedAt = 0;
    let restartedAt = 0;
    try {
      await load.until(() => load.succeeded >= phase, `${phase} answers before the kill`);
      // The kill lands amid the workers' requests.
      const exited = (server as ServerProcess).kill();
      killedAt = Date.now();
      await exited;
      server = await start();
      restartedAt = Date.now();
      await load.until(() => load.sentSince(restartedAt) >= phase, `${phase} requests after the restart`);
    } finally {
      result = await load.stop();
    }
    const { sent, succeeded, failures } = result;
    const succeededBeforeKill = result.records.filter((record) => record.ok && record.endedAt < killedAt).length;
    const firstSuccessAfterKill = load.firstSuccessStartedAfter(killedAt);

    const after = await api("GET", "/api/v1/catalog/export");
    const usage = (await api("GET", "/api/v1/usage?key=load")) as { usage: { requests: number }[] };
    const kept = usage.usage.reduce((sum, row) => sum + row.requests, 0);
    const recovery = firstSuccessAfterKill !== undefined ? `${seconds(killedAt, firstSuccessAfterKill)} to the first answer after the kill (restart included)` : "did not recover";
    reportChaos({
      scenario: "kill -9 the server (SQLite), start it again",
      sent,
      succeeded,
      failed: failures.total,
      reasons: failures.reasons,
      recovery,
      notes: `catalog and keys ${JSON.stringify(after) === JSON.stringify(before) ? "intact" : "CHANGED"}; usage kept ${kept} of ${succeeded} answered (${succeededBeforeKill} before the kill); no replica (external models)`,
    });

    expect(sent).toBe(succeeded + failures.total);
    expect(after).toEqual(before);
    expectRefusedOrCutInTheOutage(result.records, killedAt);
    expect(firstSuccessAfterKill).toBeDefined();
    // The key made before the kill still opens the gateway: the load after the restart used it.
    expect(succeeded).toBeGreaterThan(succeededBeforeKill);
    // At least: a request cut at the kill may have been journalled after the server answered it.
    expect(kept).toBeGreaterThanOrEqual(succeeded);
  }, 240_000);
});

/**
 * The same kill with engines running: a server on SQLite, one simulated agent
 * (its engines real processes) and a placed model of two replicas, under the
 * same load through the server's gateway with a key. The server is started
 * again on its data directory and port, and the agent, which only retries,
 * finds it again. The replicas must come back as they were (same ids, same
 * engine pids): a restarted server that restarted or re-placed them would
 * turn its own outage into the engines' too.
 */
// The chaos pacing (an agent's restart room, as in the fleet scenarios), with keys on the gateway so usage is
// counted, and the default settling window: how long a restarted server waits for its agents before it acts.
const engineServerYaml = serverYaml.replace("gateway:\n  auth: open\n", "").replace("heartbeat_deadline: 4s", "heartbeat_deadline: 10s").replace("  settling_window: 2s\n", "");

describe("chaos: kill -9 the server (SQLite) with engines running, and start it again", () => {
  let cluster: Cluster | undefined;
  let load: SteadyLoad | undefined;
  afterAll(async () => {
    await load?.stop();
    await cluster?.close();
    if (cluster) rmSync(cluster.directory, { recursive: true, force: true });
  });

  it("keeps catalog, keys, usage and every replica, refuses requests in the outage cleanly and serves again", async () => {
    const fleet = (cluster = await startCluster("llmgw-chaos-server-engines-", ["node-a"], {}, engineServerYaml));
    await fleet.addModel("pair", modelYaml("pair", "scaling: { min: 2, max: 2 }\n"), "--wait");
    const before = await fleet.readyReplicas("pair", 2);
    const { key } = await fleet.api<{ key: string }>("POST", "/api/v1/keys", { name: "load", rpm: 100_000 });
    const catalogBefore = await fleet.api<unknown>("GET", "/api/v1/catalog/export");
    const node = async () => (await fleet.api<{ nodes: NodeView[] }>("GET", "/api/v1/nodes")).nodes.find((candidate) => candidate.name === "node-a");

    const steady = (load = new SteadyLoad({ baseURL: `${fleet.server.url}/v1`, apiKey: key, model: "pair", concurrency: 4 }));
    let result: LoadResult;
    let killedAt = 0;
    let restartedAt = 0;
    let reportedAt: number | undefined;
    try {
      await steady.until(() => steady.succeeded >= phase, `${phase} answers before the kill`);
      const exited = fleet.server.kill();
      killedAt = Date.now();
      await exited;
      await fleet.startServer();
      restartedAt = Date.now();
      // The agent's report is back: a heartbeat the restarted server took in, with both replicas ready in its view.
      await waitFor(async () => {
        const view = await node();
        const ready = (await fleet.replicas("pair")).filter((replica) => replica.state === "ready");
        return view?.state === "ready" && Date.parse(view.last_seen_at) >= restartedAt && ready.length === 2;
      }, 60_000, "node-a's agent to report to the restarted server with both replicas ready");
      reportedAt = Date.now();
      const reported = reportedAt;
      // Answers after the report give the restarted reconciler passes of its own (500 ms apart) to act, if it would.
      await steady.until(() => steady.succeededSince(reported) >= phase, `${phase} answers after the agent's report`);
    } finally {
      result = await steady.stop();
    }
    const firstSuccessAfterKill = steady.firstSuccessStartedAfter(killedAt);
    const succeededBeforeKill = result.records.filter((record) => record.ok && record.endedAt < killedAt).length;
    // Every replica the restarted server knows, whatever its state: one placed anew would show here.
    const after = await fleet.replicas("pair");
    const catalogAfter = await fleet.api<unknown>("GET", "/api/v1/catalog/export");
    const usage = await fleet.api<{ usage: { requests: number }[] }>("GET", "/api/v1/usage?key=load");
    const kept = usage.usage.reduce((sum, row) => sum + row.requests, 0);
    const actedSinceKill = (await fleet.events("pair")).filter((event) => Date.parse(event.at) >= killedAt && event.kind !== "replica-ready").map((event) => event.kind);
    const same = replicaIdentities(after).join(", ") === replicaIdentities(before).join(", ");
    reportChaos({
      scenario: "kill -9 the server (SQLite) with engines running, start it again",
      sent: result.sent,
      succeeded: result.succeeded,
      failed: result.failed,
      reasons: result.failures.reasons,
      recovery: `${seconds(killedAt, firstSuccessAfterKill)} to the first answer after the kill (restart included), ${seconds(killedAt, reportedAt)} to the agent's report (both replicas ready in the restarted server's view)`,
      notes: `catalog and keys ${JSON.stringify(catalogAfter) === JSON.stringify(catalogBefore) ? "intact" : "CHANGED"}; usage kept ${kept} of ${result.succeeded} answered (${succeededBeforeKill} before the kill); ${same ? "no replica restarted (the same 2 replica ids and engine pids)" : `REPLICAS CHANGED: ${replicaIdentities(before).join(", ")} → ${replicaIdentities(after).join(", ")}`}${actedSinceKill.length > 0 ? `; the reconciler acted: ${actedSinceKill.join(", ")}` : ""}`,
    });

    expect(result.sent).toBe(result.succeeded + result.failed);
    expect(catalogAfter).toEqual(catalogBefore);
    expect(replicaIdentities(after)).toEqual(replicaIdentities(before));
    expect(actedSinceKill).toEqual([]);
    expectRefusedOrCutInTheOutage(result.records, killedAt);
    expect(firstSuccessAfterKill).toBeDefined();
    // The key made before the kill still opens the gateway: the load after the restart used it.
    expect(result.succeeded).toBeGreaterThan(succeededBeforeKill);
    // At least: a request cut at the kill may have been journalled after the engine answered it.
    expect(kept).toBeGreaterThanOrEqual(result.succeeded);
  }, 240_000);
});
