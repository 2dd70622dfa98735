/**
 * The admin API under a fleet's weight: a real `llmgw server` process (so its
 * RSS is its own), 2,000 runtime models, and 500 nodes heartbeating every
 * 2 s, driven at the protocol level over loopback HTTP from this process
 * (500 agents' messages, not 500 agent processes). While the beats run, it
 * times `GET /api/v1/models`, `/nodes` and `/replicas` one after another and
 * reports p50/p99 and the server's resident memory. Goals: p99 under 50 ms,
 * RSS under 250 MB.
 */
import { spawn } from "node:child_process";
import { createHash, randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { cpus, loadavg, tmpdir } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { Agent, request } from "undici";
import { packageRoot } from "../src/package-root.js";
import { insertModelEntry } from "../src/store/model-rows.js";
import { openStore } from "../src/store/open-store.js";
import { insertToken } from "../src/store/token-rows.js";

export interface AdminApiSettings {
  readonly models: number;
  readonly nodes: number;
  readonly replicasPerNode: number;
  readonly samples: number;
  readonly beatIntervalMs: number;
}

export interface AdminApiResult {
  readonly route: string;
  readonly p50_ms: number;
  readonly p99_ms: number;
  readonly max_ms: number;
  readonly bytes: number;
  /** The server's own CPU time per request, with no heartbeats running: what the route costs, whatever else the machine runs. */
  readonly cpu_ms_per_request: number;
}

export interface AdminApiReport {
  readonly settings: AdminApiSettings;
  readonly results: readonly AdminApiResult[];
  readonly rss_mb: number;
  readonly peak_rss_mb: number;
  readonly beats_sent: number;
  readonly beats_failed: number;
  /** The server's CPU time per heartbeat (beats alone, no reads). */
  readonly cpu_ms_per_beat: number;
  readonly markdown: string;
}

export const defaultAdminApiSettings: AdminApiSettings = { models: 2000, nodes: 500, replicasPerNode: 4, samples: 200, beatIntervalMs: 2000 };

async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

/** The CPU time a process has used so far, in ms, from /proc (utime + stime, in clock ticks of 10 ms). */
function cpuMsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function percentile(sorted: readonly number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)] ?? 0;
}

/** The server's resident memory now and at its peak, in MB, from /proc. */
function memoryOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0) / 1024;
  return { rss: field("VmRSS"), peak: field("VmHWM") };
}

const since = "2026-01-01T00:00:00.000Z";

function inventory(node: number) {
  return {
    hostname: `bench-${node}`,
    gpus: Array.from({ length: 8 }, (_, index) => ({ index, uuid: `GPU-${node}-${index}`, name: "NVIDIA H100 80GB HBM3", class: "h100", memory_bytes: 80 * 1024 ** 3, fabric: `nvl${node}` })),
    memory_bytes: 1024 * 1024 ** 3,
    cpu_cores: 128,
    engines: ["vllm", "sglang", "llamacpp"],
    disk_free_bytes: 10 ** 13,
    simulated: true,
  };
}

export async function adminApiBench(settings: AdminApiSettings = defaultAdminApiSettings): Promise<AdminApiReport> {
  const dataDir = mkdtempSync(path.join(tmpdir(), "llmgw-bench-api-"));
  const adminToken = `llmgw_admin_bench${randomUUID().replaceAll("-", "")}`;
  // The catalog and the token are written straight to the store before the server starts: adding
  // 2,000 models through the API would time the catalog's validation 2,000 times, not the reads.
  const store = await openStore({ database: undefined, dataDir });
  const at = new Date().toISOString();
  await store.db.transaction().execute(async (transaction) => {
    for (let index = 0; index < settings.models; index += 1) {
      await insertModelEntry(
        transaction,
        {
          name: `bench-model-${index}`,
          context: 8192,
          owner: `team-${index % 20}`,
          profiles: [{ name: "default", engine: "vllm", source: `hf://bench/model-${index}@main`, gpus: 2, gpu_class: "h100", args: ["--enforce-eager"], env: { HF_HUB_OFFLINE: "1" } }],
        } as Parameters<typeof insertModelEntry>[1],
        at,
      );
    }
  });
  await store.db.updateTable("catalog_revision").set((eb) => ({ revision: eb("revision", "+", 1) })).where("id", "=", 1).execute();
  await insertToken(store.db, { id: randomUUID(), name: "bench-admin", role: "admin", hash: createHash("sha256").update(adminToken).digest("hex") }, at);
  await store.close();

  const port = await freePort();
  const server = spawn(process.execPath, [path.join(packageRoot.directory, "bin", "llmgw.js"), "server", "--data-dir", dataDir, "--listen", `127.0.0.1:${port}`, "--log-level", "error"], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let serverErrors = "";
  server.stderr?.on("data", (chunk: Buffer) => (serverErrors += chunk.toString()));
  const url = `http://127.0.0.1:${port}`;
  const dispatcher = new Agent({ connections: 64 });
  const call = async (method: "GET" | "POST", route: string, token: string | undefined, body?: unknown) => {
    const response = await request(`${url}${route}`, {
      method,
      dispatcher,
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await response.body.text();
    return { status: response.statusCode, text };
  };

  let beatsSent = 0;
  let beatsFailed = 0;
  let running = true;
  try {
    for (let attempt = 0; ; attempt += 1) {
      const ready = await call("GET", "/healthz", undefined).then((answer) => answer.status === 200, () => false);
      if (ready) break;
      if (attempt > 300 || server.exitCode !== null) throw new Error(`the server did not start: ${serverErrors}`);
      await sleep(100);
    }
    const joinToken = (JSON.parse((await call("POST", "/api/v1/node-tokens", adminToken, {})).text) as { token: string }).token;
    const credentials: string[] = [];
    for (let node = 0; node < settings.nodes; node += 1) {
      const answer = await call("POST", "/api/v1/agent/join", undefined, {
        protocol: 1,
        join_token: joinToken,
        name: `bench-${node}`,
        address: `http://127.0.0.1:${20000 + node}`,
        fabric: `nvl${node}`,
        labels: { rack: String(node % 40) },
        inventory: inventory(node),
      });
      if (answer.status !== 200) throw new Error(`join of bench-${node} answered ${answer.status}: ${answer.text}`);
      credentials.push((JSON.parse(answer.text) as { credential: string }).credential);
    }
    let cycle = 0;
    const beat = async (node: number) => {
      const replicas = Array.from({ length: settings.replicasPerNode }, (_, slot) => {
        const model = (node * settings.replicasPerNode + slot) % settings.models;
        // One replica in fifty changes every cycle (progress while fetching), so the writes of a real fleet are there too.
        const changing = (node + slot + cycle) % 50 === 0;
        return {
          id: `bench-${node}-${slot}`,
          model: `bench-model-${model}`,
          profile: "default",
          engine: "vllm",
          cards: [slot * 2, slot * 2 + 1],
          state: changing ? "fetching" : "ready",
          ...(changing ? { progress: { fraction: (cycle % 100) / 100, bytes_done: cycle, bytes_total: 100 } } : { endpoint: `http://127.0.0.1:${41000 + slot}`, pid: 1000 + slot }),
          since,
        };
      });
      const answer = await call("POST", "/api/v1/agent/heartbeat", credentials[node], { protocol: 1, name: `bench-${node}`, address: `http://127.0.0.1:${20000 + node}`, replicas }).catch(() => ({ status: 0, text: "" }));
      beatsSent += 1;
      if (answer.status !== 200) beatsFailed += 1;
    };
    // Every node reports once before timing, so the replicas are there to list.
    for (let node = 0; node < settings.nodes; node += 25) await Promise.all(Array.from({ length: Math.min(25, settings.nodes - node) }, (_, offset) => beat(node + offset)));
    const pid = server.pid ?? 0;
    const routes = ["/api/v1/models", "/api/v1/nodes", "/api/v1/replicas"];
    // What each read costs the server, measured before the beats start so nothing else is counted.
    const cpuPerRequest = new Map<string, number>();
    for (const route of routes) {
      for (let warm = 0; warm < 3; warm += 1) await call("GET", route, adminToken);
      const before = cpuMsOf(pid);
      const quietSamples = 30;
      for (let sample = 0; sample < quietSamples; sample += 1) await call("GET", route, adminToken);
      cpuPerRequest.set(route, (cpuMsOf(pid) - before) / quietSamples);
    }
    // Then the beats go on, spread evenly over the interval, as 500 agents started at different times would send them.
    const beating = (async () => {
      const gapMs = settings.beatIntervalMs / settings.nodes;
      while (running) {
        const cycleStart = performance.now();
        for (let node = 0; node < settings.nodes && running; node += 1) {
          void beat(node);
          const due = cycleStart + (node + 1) * gapMs;
          const wait = due - performance.now();
          if (wait > 0) await sleep(wait);
        }
        cycle += 1;
      }
    })();

    // What the beats alone cost the server: two intervals with no reads.
    const beatsBefore = beatsSent;
    const cpuBefore = cpuMsOf(pid);
    await sleep(2 * settings.beatIntervalMs);
    const cpuPerBeat = (cpuMsOf(pid) - cpuBefore) / Math.max(1, beatsSent - beatsBefore);
    const results: AdminApiResult[] = [];
    for (const route of routes) {
      const samples: number[] = [];
      let bytes = 0;
      for (let sample = 0; sample < settings.samples + 5; sample += 1) {
        const started = performance.now();
        const answer = await call("GET", route, adminToken);
        const elapsed = performance.now() - started;
        if (answer.status !== 200) throw new Error(`GET ${route} answered ${answer.status}: ${answer.text.slice(0, 300)}`);
        bytes = answer.text.length;
        if (sample >= 5) samples.push(elapsed); // the first few warm the server's code paths
      }
      samples.sort((left, right) => left - right);
      results.push({ route, p50_ms: percentile(samples, 0.5), p99_ms: percentile(samples, 0.99), max_ms: samples[samples.length - 1] ?? 0, bytes, cpu_ms_per_request: cpuPerRequest.get(route) ?? 0 });
    }
    const memory = server.pid === undefined ? { rss: 0, peak: 0 } : memoryOf(server.pid);
    running = false;
    await beating;
    const markdown = [
      `## Admin API at ${settings.nodes} nodes heartbeating and ${settings.models.toLocaleString("en")} models`,
      "",
      `${settings.nodes} nodes of 8 cards beat every ${settings.beatIntervalMs / 1000} s over loopback HTTP, each reporting ${settings.replicasPerNode} replicas (${(settings.nodes * settings.replicasPerNode).toLocaleString("en")} in all, one in fifty changing each beat); ${settings.samples} timed GETs per route, one after another, while the beats run. Goals: p99 under 50 ms, RSS under 250 MB.`,
      "",
      "| route | p50 ms | p99 ms | max ms | server CPU ms per request (no beats) | answer bytes |",
      "| --- | ---: | ---: | ---: | ---: | ---: |",
      ...results.map(
        (result) =>
          `| GET ${result.route} | ${result.p50_ms.toFixed(1)} | ${result.p99_ms.toFixed(1)} | ${result.max_ms.toFixed(1)} | ${result.cpu_ms_per_request.toFixed(1)} | ${result.bytes.toLocaleString("en")} |`,
      ),
      "",
      `Server RSS after the timed reads: ${memory.rss.toFixed(0)} MB (peak ${memory.peak.toFixed(0)} MB). Heartbeats sent: ${beatsSent.toLocaleString("en")}, not answered 200: ${beatsFailed}; server CPU per heartbeat ${cpuPerBeat.toFixed(2)} ms (${((cpuPerBeat * settings.nodes * 1000) / settings.beatIntervalMs / 10).toFixed(0)}% of one core at this fleet). Load average of the machine at the end: ${loadavg()[0]?.toFixed(1)} on ${cpus().length} cores (latencies include waiting for a core; CPU per request does not).`,
    ].join("\n");
    return { settings, results, rss_mb: memory.rss, peak_rss_mb: memory.peak, beats_sent: beatsSent, beats_failed: beatsFailed, cpu_ms_per_beat: cpuPerBeat, markdown };
  } finally {
    running = false;
    server.kill("SIGTERM");
    await new Promise((resolve) => (server.exitCode !== null ? resolve(undefined) : server.once("exit", resolve)));
    await dispatcher.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
