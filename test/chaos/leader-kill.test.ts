import { copyFileSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { NodeView } from "../../src/protocol/views.js";
import { Cluster, modelYaml, replicaIdentities, serverYaml } from "../support/cluster.js";
import { waitFor } from "../support/fake-engine.js";
import { createTestDatabase, postgresAdminUrl } from "../support/postgres.js";
import { startServerProcess, type ServerProcess } from "../support/processes.js";
import { temporaryDirectory } from "../support/temporary-directory.js";
import { reportChaos } from "./chaos-report.js";
import { seconds, SteadyLoad, type LoadResult } from "./steady-load.js";

/**
 * Two servers on one Postgres, sharing the reconciler's lease: kill -9 of the
 * leader under a steady load (half streamed) through the other server's
 * gateway. The agents report to the survivor, so the fleet stays heard from;
 * the lease moves once it expires (3 s here), and the survivor serves
 * throughout, with the replicas the leader placed (none restarted by the
 * takeover).
 */

const scenario = "kill -9 the leader of two servers on one Postgres";
/** Answers before the kill, and after the lease moved. */
const phase = 60;

if (!postgresAdminUrl) {
  // Said in the table too, so a report made without Postgres does not read as if the scenario held.
  reportChaos({ scenario, sent: 0, succeeded: 0, failed: 0, reasons: new Map(), recovery: "not run", notes: "not run: LLMGW_TEST_POSTGRES_URL is not set (export LLMGW_TEST_POSTGRES_URL=postgres://USER:PASSWORD@127.0.0.1:5432/postgres, a role that may create databases)" });
}

describe.skipIf(!postgresAdminUrl)("chaos: the Postgres leader of two servers killed (needs LLMGW_TEST_POSTGRES_URL)", () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  let load: SteadyLoad | undefined;
  afterAll(async () => {
    await load?.stop();
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it("moves the lease to the survivor, which serves throughout", async () => {
    const database = await createTestDatabase();
    cleanups.push(() => database.drop());
    const directory = temporaryDirectory("llmgw-chaos-leader-");
    cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
    writeFileSync(path.join(directory, "server.yaml"), serverYaml);
    const start = (name: string) => startServerProcess({ cwd: directory, dataDir: path.join(directory, name), args: ["-c", "server.yaml", "--database", database.url] });
    const leader = await start("first");
    cleanups.push(() => (leader.child.exitCode === null && leader.child.signalCode === null ? leader.stop() : undefined));
    const holds = async (server: ServerProcess) => {
      const response = await fetch(`${server.url}/api/v1/reconciler`, { headers: { authorization: `Bearer ${leader.token}` } });
      return ((await response.json()) as { this_server_holds: boolean }).this_server_holds;
    };
    await waitFor(() => holds(leader), 20_000, "the first server to hold the lease");
    // Servers sharing a database share the key the agents' control secrets come from (DATA_DIR/server-key).
    mkdirSync(path.join(directory, "second"), { recursive: true, mode: 0o700 });
    copyFileSync(path.join(directory, "first", "server-key"), path.join(directory, "second", "server-key"));
    const survivor = await start("second");
    expect(await holds(survivor)).toBe(false);

    // The cluster helper on the survivor, with the admin token the first server made in the shared database.
    const cluster = new Cluster(directory, Number(new URL(survivor.url).port));
    cluster.server = { ...survivor, token: leader.token, stop: () => survivor.stop() };
    cleanups.push(() => cluster.close());
    cluster.joinToken = (await cluster.api<{ token: string }>("POST", "/api/v1/node-tokens", {})).token;
    for (const name of ["node-a", "node-b"]) cluster.startAgent(name);
    await waitFor(async () => {
      const nodes = (await cluster.api<{ nodes: NodeView[] }>("GET", "/api/v1/nodes")).nodes;
      return nodes.length === 2 && nodes.every((node) => node.state === "ready");
    }, 30_000, "the nodes to join the survivor");
    await cluster.addModel("pair", modelYaml("pair", "scaling: { min: 2, max: 2 }\n"), "--wait");
    const before = await cluster.readyReplicas("pair", 2);

    const steady = (load = new SteadyLoad({ baseURL: `${survivor.url}/v1`, model: "pair", concurrency: 4 }));
    let result: LoadResult;
    let killedAt = 0;
    let movedAt: number | undefined;
    try {
      await steady.until(() => steady.succeeded >= phase, `${phase} answers before the kill`);
      const exited = leader.kill();
      killedAt = Date.now();
      await exited;
      await waitFor(() => holds(survivor), 30_000, "the survivor to take the lease");
      movedAt = Date.now();
      const after = movedAt;
      await steady.until(() => steady.succeededSince(after) >= phase, `${phase} answers after the lease moved`);
    } finally {
      result = await steady.stop();
    }
    const after = await cluster.readyReplicas("pair", 2);
    reportChaos({
      scenario,
      sent: result.sent,
      succeeded: result.succeeded,
      failed: result.failed,
      reasons: result.failures.reasons,
      recovery: `${seconds(killedAt, movedAt)} for the lease to move (it lasts 3 s)`,
      notes: `the survivor's gateway served throughout; ${replicaIdentities(after).join() === replicaIdentities(before).join() ? "no replica restarted by the takeover (the same 2 replica ids and engine pids)" : "REPLICAS CHANGED by the takeover"}`,
    });
    expect(result.failed, JSON.stringify([...result.failures.reasons])).toBe(0);
    expect(replicaIdentities(after)).toEqual(replicaIdentities(before));
  }, 240_000);
});
