import { spawn, type ChildProcess } from "node:child_process";
import { copyFileSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EventView, NodeView, ReplicaView } from "../../src/protocol/views.js";
import { llmgwBin, startServerProcess, type ServerProcess } from "../support/processes.js";
import { temporaryDirectory } from "../support/temporary-directory.js";
import { killGroup, waitFor } from "../support/fake-engine.js";
import { createTestDatabase, postgresAdminUrl } from "../support/postgres.js";
import { chat, modelYaml, serverYaml, startCluster, steadyStream, type Cluster } from "../support/cluster.js";

// Longer than the waits inside, so a wait that runs out says what it waited for rather than "test timed out".
describe("the reconciler with a server and two simulated agents as real processes", { timeout: 120_000 }, () => {
  let cluster: Cluster;

  beforeAll(async () => {
    cluster = await startCluster("llmgw-reconcile-e2e-", ["node-a", "node-b"]);
  }, 60_000);

  afterAll(async () => {
    await cluster?.close();
    if (cluster) rmSync(cluster.directory, { recursive: true, force: true });
  });

  it("serves a model added at runtime by itself: `model add --wait` prints the replica's states until it is ready", async () => {
    const output = await cluster.addModel("tiny", modelYaml("tiny", ""), "--wait");
    expect(output).toMatch(/tiny-[0-9a-f]{6} on node-[ab]: (pending|fetching|starting)/);
    expect(output).toContain("tiny is ready: 1 replica serving.");
    await cluster.readyReplicas("tiny", 1);
    expect(await chat(cluster.server.url)).not.toBe("");
    // replica-ready is told by the first pass after the agent reported it.
    const kinds = await waitFor(async () => {
      const listed = (await cluster.events("tiny")).map((event) => event.kind);
      return listed.includes("replica-ready") ? listed : undefined;
    }, 10_000, "the replica-ready event");
    expect(kinds).toEqual(expect.arrayContaining(["replica-placed", "replica-started", "replica-ready"]));
    expect(await cluster.ctl("events", "--model", "tiny")).toMatch(/replica-ready\s+replica tiny-[0-9a-f]{6} of tiny is ready on node-[ab]/);
  });

  it("follows events as they happen with `ctl events --follow --json`", async () => {
    const follower = spawn(process.execPath, [llmgwBin, "ctl", "--server", cluster.server.url, "--token", cluster.server.token, "events", "--follow", "--json", "--since", "999999999"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    follower.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    try {
      // Nothing after that id yet; a cordon now is an event the follower prints as one JSON line.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      await cluster.ctl("node", "cordon", "node-b");
      const line = await waitFor(() => output.split("\n").find((candidate) => candidate.includes("node-cordoned")), 20_000, "the followed cordon event");
      expect(JSON.parse(line)).toMatchObject({ kind: "node-cordoned", node: "node-b", model: null });
    } finally {
      follower.kill("SIGTERM");
      await cluster.ctl("node", "uncordon", "node-b");
    }
  });

  it("refuses what it cannot do, saying what to do instead", async () => {
    const badSince = await cluster.ctlRaw("events", "--since", "yesterday");
    expect(badSince.code).not.toBe(0);
    expect(badSince.stderr).toContain("since=yesterday: neither an event id nor a time");
    const unknownNode = await cluster.ctlRaw("node", "cordon", "node-z");
    expect(unknownNode.code).not.toBe(0);
    expect(unknownNode.stderr).toContain("no node named node-z has joined this server");
    await expect(cluster.api("POST", "/api/v1/models/nothing-here/demand", {})).rejects.toThrow(/404.*model_not_found/);
    // By hand, through placement's filters: 100 GiB of host memory on a node of 64.
    await cluster.addModel("hungry", modelYaml("hungry", "scaling: { min: 0, max: 0 }\n", "{ engine: vllm, source: \"hf://example/hungry@main\", gpu_class: h100, gpus: 1, memory_gb: 100 }"));
    const tooBig = await cluster.ctlRaw("replica", "start", "hungry", "--node", "node-a");
    expect(tooBig.code).not.toBe(0);
    expect(tooBig.stderr).toMatch(/hungry\/vllm does not fit on node node-a: node-a has 64.0 GiB free host memory and needs 100.0 GiB/);
    await cluster.ctl("model", "remove", "hungry");
  });

  it("refuses a model too large for any node, and says why in `ctl models` and `ctl model show`", async () => {
    await cluster.addModel("huge", modelYaml("huge", "", "{ engine: vllm, source: \"hf://example/huge@main\", gpu_class: h100, gpus: 4 }"), "--keep-unplaceable");
    const reason = await waitFor(async () => (await cluster.model("huge")).placement?.reason ?? undefined, 20_000, "huge's placement");
    expect(reason).toBe("0 of 2 nodes: 2 have 2 h100 and need 4");
    expect(await cluster.ctl("models")).toContain("huge: unplaceable: 0 of 2 nodes: 2 have 2 h100 and need 4");
    expect(await cluster.ctl("model", "show", "huge")).toMatch(/placement\s+unplaceable: 0 of 2 nodes/);
    expect((await cluster.events("huge")).map((event) => event.kind)).toContain("model-unplaceable");
    // The refusal is an event once, not once per pass.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect((await cluster.events("huge")).filter((event) => event.kind === "model-unplaceable")).toHaveLength(1);
    await cluster.ctl("model", "remove", "huge");
  });

  it("brings back an engine killed with SIGKILL, then backs off a model whose engine keeps failing", async () => {
    const [before] = await cluster.readyReplicas("tiny", 1);
    process.kill(before?.pid as number, "SIGKILL");
    const [after] = await waitFor(async () => {
      const list = (await cluster.replicas("tiny")).filter((replica) => replica.state === "ready" && replica.id !== before?.id);
      return list.length === 1 ? list : undefined;
    }, 60_000, "a new ready replica of tiny");
    expect(after?.pid).not.toBe(before?.pid);
    expect((await cluster.model("tiny")).last_failure?.reason).toMatch(/killed by SIGKILL/);

    // An engine that fails at every load: retried after 1 s, then 2 s, then 4 s (the cap).
    await cluster.addModel("broken", modelYaml("broken", "", "{ engine: vllm, source: \"hf://example/broken@main\", gpu_class: h100, gpus: 1, env: { LLMGW_SIM_FAULT: fail-load } }"));
    const failing = await waitFor(async () => {
      const view = await cluster.model("broken");
      return (view.last_failure?.failures ?? 0) >= 3 ? view : undefined;
    }, 60_000, "three failures of broken in a row");
    expect(failing.last_failure?.reason).toMatch(/exited with code 1 while loading broken/);
    // The third failure's event can land a moment after the model's count shows it: wait for the events themselves.
    const waits = await waitFor(async () => {
      const found = (await cluster.events("broken")).filter((event) => event.kind === "replica-failed").map((event) => /next start in (\d+) s/.exec(event.message)?.[1]);
      return found.length >= 3 ? found : undefined;
    }, 30_000, "three replica-failed events of broken");
    expect(waits.slice(0, 3)).toEqual(["1", "2", "4"]);
    // The list and the model's own page both say it keeps failing, and when it is tried next.
    expect(await cluster.ctl("models")).toMatch(/broken: failing \(\d+ in a row; (next start at \S+|starting again now)\): .*exited with code 1 while loading broken/);
    expect(await cluster.ctl("model", "show", "broken")).toMatch(/last failure\s+\S+ \(\d+ in a row/);
    await cluster.ctl("model", "remove", "broken");
  });

  it("starts an on-demand model when demand is reported, and stops it after idle_timeout without requests", async () => {
    await cluster.addModel("sometimes", modelYaml("sometimes", "scaling: { min: 0, max: 1, idle_timeout: 3s }\n"));
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await cluster.replicas("sometimes")).toEqual([]);
    await cluster.api("POST", "/api/v1/models/sometimes/demand", {});
    await cluster.readyReplicas("sometimes", 1);
    expect(await chat(cluster.server.url, "sometimes")).not.toBe("");
    await waitFor(async () => (await cluster.replicas("sometimes")).length === 0, 30_000, "sometimes to stop after its idle timeout");
    // The stop is told by the reconciler's next pass after the agent reported it.
    const kinds = await waitFor(async () => {
      const listed = (await cluster.events("sometimes")).map((event) => event.kind);
      return listed.includes("replica-stopped") ? listed : undefined;
    }, 10_000, "the replica-stopped event");
    expect(kinds).toEqual(expect.arrayContaining(["replica-placed", "replica-ready", "replica-draining", "replica-stopped"]));
    await cluster.ctl("model", "remove", "sometimes");
  });

  it("preempts an opportunistic model for a critical one that has no room", async () => {
    // tiny holds one card of one node; batch takes the whole other node.
    await cluster.addModel("batch", modelYaml("batch", "scaling: { min: 0, max: 1, idle_timeout: 10m }\n", "{ engine: vllm, source: \"hf://example/batch@main\", gpu_class: h100, gpus: 2 }"));
    await cluster.api("POST", "/api/v1/models/batch/demand", {});
    const [batch] = await cluster.readyReplicas("batch", 1);
    await cluster.addModel("prod", modelYaml("prod", "class: critical\n", "{ engine: vllm, source: \"hf://example/prod@main\", gpu_class: h100, gpus: 2 }"));
    const [prod] = await cluster.readyReplicas("prod", 1);
    expect(prod?.node).toBe(batch?.node);
    expect((await cluster.events("batch")).find((event) => event.kind === "replica-preempted")?.message, JSON.stringify(await cluster.api("GET", "/api/v1/events?limit=100"), null, 1)).toContain("preempted by prod (critical)");
    const batchView = await waitFor(async () => {
      const view = await cluster.model("batch");
      return view.placement?.state === "unplaceable" ? view : undefined;
    }, 20_000, "batch to be unplaceable");
    expect(batchView.placement?.reason).toMatch(/^0 of 2 nodes/);
    await cluster.ctl("model", "remove", "prod");
    await cluster.ctl("model", "remove", "batch");
    await waitFor(async () => (await cluster.replicas()).every((replica) => replica.model === "tiny"), 30_000, "prod and batch to stop");
  });

  it("restarts a model under a steady stream of requests without failing one", async () => {
    const [old] = await cluster.readyReplicas("tiny", 1);
    // A client of the gateway, which follows the replicas as they move: the old one leaves its routing table before it drains.
    const stream = steadyStream(cluster.server.url, "tiny");
    const output = await cluster.ctl("restart", "--model", "tiny", "--wait");
    const { served, errors } = await stream.stop();
    expect(output).toContain("Restarting tiny: 1 replica to replace.");
    expect(output).toContain("tiny is ready: 1 replica serving.");
    expect(errors).toEqual([]);
    expect(served).toBeGreaterThan(5);
    const [replacement] = await cluster.readyReplicas("tiny", 1);
    expect(replacement?.id).not.toBe(old?.id);
    await waitFor(async () => (await cluster.events("tiny")).some((event) => event.kind === "model-restarted"), 20_000, "the restart to finish");
  });

  it("refuses a restart with no room beside the replica, and says that --in-place would stop it first", async () => {
    await cluster.addModel("wide", modelYaml("wide", "", "{ engine: vllm, source: \"hf://example/wide@main\", gpu_class: h100, gpus: 2 }"));
    await cluster.readyReplicas("wide", 1);
    const refused = await cluster.ctlRaw("restart", "--model", "wide");
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("no room to start a replica of wide on its profile vllm beside the ones it replaces");
    expect(refused.stderr).toContain("--in-place");
    const inPlace = await cluster.ctl("restart", "--model", "wide", "--in-place", "--wait");
    expect(inPlace).toContain("wide is ready: 1 replica serving.");
    await cluster.ctl("model", "remove", "wide");
    await waitFor(async () => (await cluster.replicas()).every((replica) => replica.model === "tiny"), 30_000, "wide to stop");
  });

  it("drains a node: its replicas move to the other node and nothing new lands on it", async () => {
    const [before] = await cluster.readyReplicas("tiny", 1);
    const from = before?.node as string;
    expect(await cluster.ctl("node", "drain", from)).toContain(`Node ${from} is draining`);
    const [after] = await waitFor(async () => {
      const list = await cluster.replicas("tiny");
      return list.length === 1 && list[0]?.state === "ready" && list[0].node !== from ? list : undefined;
    }, 60_000, "tiny to move off the drained node");
    expect(after?.node).not.toBe(from);
    const refused = await cluster.ctlRaw("replica", "start", "tiny", "--node", from);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(`node ${from} is draining: no new replicas are placed there`);
    expect(await cluster.ctl("node", "uncordon", from)).toContain(`Node ${from} is schedulable again`);
  });

  it("places the replicas of a lost node elsewhere", async () => {
    const [before] = await cluster.readyReplicas("tiny", 1);
    const lostNode = before?.node as string;
    await cluster.killAgent(lostNode);
    killGroup(before?.pid ?? undefined);
    const [after] = await waitFor(async () => {
      const list = (await cluster.replicas("tiny")).filter((replica) => replica.state === "ready");
      return list.length === 1 && list[0]?.node !== lostNode ? list : undefined;
    }, 60_000, "tiny to be placed on the other node");
    expect(after?.node).not.toBe(lostNode);
    expect((await cluster.events("tiny")).map((event) => event.kind)).toContain("replica-lost");
  });
});

describe.runIf(postgresAdminUrl)("two servers on one Postgres", () => {
  it("moves the lease to the other server when the leader is killed, and no replica is started twice", async () => {
    const database = await createTestDatabase();
    const directory = temporaryDirectory("llmgw-reconcile-pg-");
    writeFileSync(path.join(directory, "server.yaml"), serverYaml);
    const servers: ServerProcess[] = [];
    let agent: ChildProcess | undefined;
    const pids = new Set<number>();
    try {
      const start = async (name: string) => {
        const server = await startServerProcess({ cwd: directory, dataDir: path.join(directory, name), args: ["-c", "server.yaml", "--database", database.url] });
        servers.push(server);
        return server;
      };
      const leader = await start("first");
      const token = leader.token;
      const ask = async <T>(server: ServerProcess, method: "GET" | "POST", route: string, body?: unknown): Promise<T> => {
        const response = await fetch(`${server.url}${route}`, {
          method,
          headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
          ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        });
        if (!response.ok) throw new Error(`${method} ${route}: ${response.status} ${await response.text()}`);
        return (await response.json()) as T;
      };
      await waitFor(async () => (await ask<{ this_server_holds: boolean }>(leader, "GET", "/api/v1/reconciler")).this_server_holds, 20_000, "the first server to hold the lease");
      // Servers sharing a database share the key the agents' control secrets come from (DATA_DIR/server-key).
      mkdirSync(path.join(directory, "second"), { recursive: true, mode: 0o700 });
      copyFileSync(path.join(directory, "first", "server-key"), path.join(directory, "second", "server-key"));
      const follower = await start("second");
      expect((await ask<{ this_server_holds: boolean }>(follower, "GET", "/api/v1/reconciler")).this_server_holds).toBe(false);

      // The agent reports to the follower, so the node stays heard from when the leader dies.
      const joinToken = (await ask<{ token: string }>(follower, "POST", "/api/v1/node-tokens", {})).token;
      agent = spawn(process.execPath, [llmgwBin, "agent", "--server", follower.url, "--name", "node-a", "--data-dir", path.join(directory, "node-a"), "--simulate", "2xH100-80GB@nvl0,cpu:16c/64g"], {
        detached: true,
        stdio: ["ignore", "ignore", "ignore"],
        env: { ...process.env, LLMGW_JOIN_TOKEN: joinToken, LLMGW_SERVER: undefined, LLMGW_TOKEN: undefined },
      });
      await waitFor(async () => (await ask<{ nodes: NodeView[] }>(follower, "GET", "/api/v1/nodes")).nodes.some((node) => node.state === "ready"), 30_000, "node-a to join");

      // Added through the leader, which is killed at once: it may have recorded the replica and not yet told the agent.
      await ask(leader, "POST", "/api/v1/models?source_check=false", { name: "tiny", context: 4096, profiles: [{ engine: "vllm", source: "hf://example/tiny@main", gpu_class: "h100", gpus: 1 }] });
      leader.child.kill("SIGKILL");
      await waitFor(async () => (await ask<{ this_server_holds: boolean }>(follower, "GET", "/api/v1/reconciler")).this_server_holds, 20_000, "the second server to take the lease");
      const seen = new Set<string>();
      const ready = await waitFor(async () => {
        const replicas = (await ask<{ replicas: ReplicaView[] }>(follower, "GET", "/api/v1/replicas")).replicas;
        for (const replica of replicas) {
          seen.add(replica.id);
          if (replica.pid !== null) pids.add(replica.pid);
        }
        return replicas.length === 1 && replicas[0]?.state === "ready" ? replicas : undefined;
      }, 60_000, "one ready replica of tiny");
      // A few more passes of the new leader: still the one replica, never a second start.
      await new Promise((resolve) => setTimeout(resolve, 3000));
      const after = (await ask<{ replicas: ReplicaView[] }>(follower, "GET", "/api/v1/replicas")).replicas;
      for (const replica of after) seen.add(replica.id);
      expect(after.map((replica) => replica.id)).toEqual(ready.map((replica) => replica.id));
      expect([...seen]).toEqual([ready[0]?.id]);
      const events = (await ask<{ events: EventView[] }>(follower, "GET", "/api/v1/events?model=tiny")).events;
      expect(events.filter((event) => event.kind === "replica-placed")).toHaveLength(1);
    } finally {
      killGroup(agent?.pid);
      for (const pid of pids) killGroup(pid);
      // The killed leader has exited already (its exit code is null after a signal, so stop() would wait for nothing).
      for (const server of servers) if (server.child.signalCode === null) await server.stop();
      await database.drop();
      rmSync(directory, { recursive: true, force: true });
    }
  }, 150_000);
});
