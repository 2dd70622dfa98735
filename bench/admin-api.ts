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
import type { ReplicaStatus } from "../src/protocol/agent-protocol.js";
import { upsertReplica } from "../src/store/fleet-rows.js";
import { insertModelEntry } from "../src/store/model-rows.js";
import { openStore } from "../src/store/open-store.js";
import { insertToken } from "../src/store/token-rows.js";

export interface AdminApiSettings {
  readonly models: number;
  readonly nodes: number;
  readonly replicasPerNode: number;
  readonly samples: number;
  readonly beatIntervalMs: number;
  /** The p99 each read and a heartbeat must stay under. */
  readonly goalP99Ms: number;
  readonly goalRssMb: number;
}

export interface LatencyFigures {
  readonly p50_ms: number;
  readonly p99_ms: number;
  readonly max_ms: number;
}

export interface AdminApiResult {
  readonly route: string;
  /** The same reads with no heartbeats running: the baseline beside the figure. */
  readonly quiet: LatencyFigures;
  /** While every node beats. */
  readonly beating: LatencyFigures;
  readonly bytes: number;
  /** The server's own CPU time per request, with no heartbeats running: what the route costs, whatever else the machine runs. */
  readonly cpu_ms_per_request: number;
}

export interface AdminApiReport {
  readonly settings: AdminApiSettings;
  readonly results: readonly AdminApiResult[];
  /** Heartbeat round trips: with no reads running (baseline), and while the reads run. */
  readonly heartbeat: { readonly quiet: LatencyFigures; readonly beating: LatencyFigures };
  /** RSS once the fleet has joined and reported, before any list was read (baseline), and after the timed reads. */
  readonly rss_before_reads_mb: number;
  readonly rss_mb: number;
  readonly peak_rss_mb: number;
  readonly beats_sent: number;
  readonly beats_failed: number;
  /** The server's CPU time per heartbeat (beats alone, no reads). */
  readonly cpu_ms_per_beat: number;
  readonly load_average: number;
  readonly markdown: string;
}

export const defaultAdminApiSettings: AdminApiSettings = { models: 2000, nodes: 500, replicasPerNode: 4, samples: 100, beatIntervalMs: 2000, goalP99Ms: 50, goalRssMb: 250 };
/** The larger fleet the same figures must hold at, with twice the time. */
export const largeAdminApiSettings: AdminApiSettings = { ...defaultAdminApiSettings, models: 5000, nodes: 1000, goalP99Ms: 100 };

/** A heartbeat not answered in this long counts as refused: an agent's own beat gives up well before its deadline. */
const beatTimeoutMs = 5000;
/** A timed read given up after this long counts at this long. */
const readTimeoutMs = 30_000;

export async function freePort(): Promise<number> {
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

/**
 * Waits until the process used under a tenth of a core over half a second,
 * for at most 6 s: no node beats meanwhile, and one silent for 15 s would be
 * lost. Answers how long it waited.
 */
async function untilIdle(pid: number): Promise<number> {
  const started = performance.now();
  while (performance.now() - started < 6000) {
    const before = cpuMsOf(pid);
    await sleep(500);
    if (cpuMsOf(pid) - before < 50) break;
  }
  return performance.now() - started;
}

function percentile(sorted: readonly number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)] ?? 0;
}

function figuresOf(samples: readonly number[]): LatencyFigures {
  const sorted = [...samples].sort((left, right) => left - right);
  return { p50_ms: percentile(sorted, 0.5), p99_ms: percentile(sorted, 0.99), max_ms: sorted[sorted.length - 1] ?? 0 };
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

/**
 * What node `node` reports at beat `cycle`: one replica in fifty is fetching its weights, its progress
 * moving at every beat, so the writes of a real fleet are there too; the others serve. The same ones
 * fetch at every beat: no agent takes a ready replica back to fetching, and a bench that flipped them
 * would measure a fleet whose replicas change state all the time.
 */
function reportedReplicas(settings: AdminApiSettings, node: number, cycle: number): ReplicaStatus[] {
  return Array.from({ length: settings.replicasPerNode }, (_, slot) => {
    const model = (node * settings.replicasPerNode + slot) % settings.models;
    const changing = (node * settings.replicasPerNode + slot) % 50 === 0;
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
  // The replicas are placed as the server's own start places them (a pending row before the agent is
  // asked): a report of a replica the server never placed is an orphan it stops, not one it lists.
  await store.db.transaction().execute(async (transaction) => {
    for (let node = 0; node < settings.nodes; node += 1) {
      for (const status of reportedReplicas(settings, node, 0)) {
        await upsertReplica(transaction, { id: status.id, node: `bench-${node}`, status: { ...status, state: "fetching" }, pending: true, spec: null, stop_requested: false, created_at: at, updated_at: at });
      }
    }
  });
  await store.db.updateTable("catalog_revision").set((eb) => ({ revision: eb("revision", "+", 1) })).where("id", "=", 1).execute();
  await insertToken(store.db, { id: randomUUID(), name: "bench-admin", role: "admin", hash: createHash("sha256").update(adminToken).digest("hex") }, at);
  await store.close();

  const port = await freePort();
  // LLMGW_BENCH_HEAP_SNAPSHOT=DIR writes the server's heap to DIR after the timed reads (to see what holds its memory).
  const heapDir = process.env.LLMGW_BENCH_HEAP_SNAPSHOT;
  const server = spawn(
    process.execPath,
    [
      ...(heapDir ? [`--heapsnapshot-signal=SIGUSR2`, `--diagnostic-dir=${heapDir}`] : []),
      // LLMGW_BENCH_CPU_PROF=DIR writes the server's CPU profile to DIR when it exits (to see where a beat's time goes).
      ...(process.env.LLMGW_BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.LLMGW_BENCH_CPU_PROF}`] : []),
      // LLMGW_BENCH_SERVER_NODE_FLAGS="--flag …" starts the server's node with these flags too (to try a V8 setting).
      ...(process.env.LLMGW_BENCH_SERVER_NODE_FLAGS ?? "").split(/\s+/).filter((flag) => flag.length > 0),
      path.join(packageRoot.directory, "bin", "llmgw.js"),
      "server",
      "--data-dir",
      dataDir,
      "--listen",
      `127.0.0.1:${port}`,
      "--log-level",
      "error",
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let serverErrors = "";
  server.stderr?.on("data", (chunk: Buffer) => (serverErrors += chunk.toString()));
  const url = `http://127.0.0.1:${port}`;
  const dispatcher = new Agent({ connections: 64 });
  // A connection the server reset is tried again, twice: the figures are the answers, and on a
  // shared machine a reset kept-alive socket says nothing about the route.
  const call = async (method: "GET" | "POST", route: string, token: string | undefined, body?: unknown, timeoutMs = 120_000) => {
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await callOnce(method, route, token, body, timeoutMs);
      } catch (error) {
        if ((error as { code?: string }).code !== "ECONNRESET" || attempt >= 2) throw new Error(`${method} ${route}: ${(error as Error).message}`, { cause: error });
        connectionResets += 1;
      }
    }
  };
  let connectionResets = 0;
  const callOnce = async (method: "GET" | "POST", route: string, token: string | undefined, body: unknown, timeoutMs: number) => {
    const response = await request(`${url}${route}`, {
      method,
      dispatcher,
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await response.body.text();
    return { status: response.statusCode, text };
  };

  let beatsSent = 0;
  let beatsFailed = 0;
  let running = true;
  // Each beat's round trip lands in the phase it was sent in.
  let beatSamples: number[] | undefined;
  try {
    for (let attempt = 0; ; attempt += 1) {
      const ready = await call("GET", "/healthz", undefined).then((answer) => answer.status === 200, () => false);
      if (ready) break;
      if (attempt > 300 || server.exitCode !== null) throw new Error(`the server did not start: ${serverErrors}`);
      await sleep(100);
    }
    const joinToken = (JSON.parse((await call("POST", "/api/v1/node-tokens", adminToken, {})).text) as { token: string }).token;
    const credentials: string[] = [];
    const join = async (node: number) => {
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
      credentials[node] = (JSON.parse(answer.text) as { credential: string }).credential;
    };
    for (let node = 0; node < settings.nodes; node += 10) await Promise.all(Array.from({ length: Math.min(10, settings.nodes - node) }, (_, offset) => join(node + offset)));
    let cycle = 0;
    const beat = async (node: number) => {
      const replicas = reportedReplicas(settings, node, cycle);
      const samples = beatSamples;
      const started = performance.now();
      const answer = await call("POST", "/api/v1/agent/heartbeat", credentials[node], { protocol: 1, name: `bench-${node}`, address: `http://127.0.0.1:${20000 + node}`, replicas }, beatTimeoutMs).catch(() => ({
        status: 0,
        text: "",
      }));
      samples?.push(performance.now() - started);
      beatsSent += 1;
      if (answer.status !== 200) beatsFailed += 1;
    };
    // Every node reports once before timing, so the replicas are there to list.
    for (let node = 0; node < settings.nodes; node += 25) await Promise.all(Array.from({ length: Math.min(25, settings.nodes - node) }, (_, offset) => beat(node + offset)));
    const pid = server.pid ?? 0;
    // The reconciler's first passes over the new fleet (thousands of placements) run in turns between other
    // work: they would be counted in the quiet baseline below. Timing starts once the server is idle.
    const settledMs = await untilIdle(pid);
    process.stderr.write(`  the server settled ${(settledMs / 1000).toFixed(1)} s after the last node reported\n`);
    const rssBeforeReads = memoryOf(pid).rss;
    const routes = ["/api/v1/models", "/api/v1/nodes", "/api/v1/replicas"];
    const timedReads = async (route: string) => {
      const samples: number[] = [];
      let bytes = 0;
      for (let sample = 0; sample < settings.samples + 5; sample += 1) {
        const started = performance.now();
        // A read the server does not answer in time counts at the time given up after: an overloaded server is a figure, not a crash.
        const answer = await call("GET", route, adminToken, undefined, readTimeoutMs).catch(() => undefined);
        const elapsed = performance.now() - started;
        if (answer === undefined) {
          samples.push(elapsed);
          continue;
        }
        if (answer.status !== 200) throw new Error(`GET ${route} answered ${answer.status}: ${answer.text.slice(0, 300)}`);
        bytes = answer.text.length;
        if (sample >= 5) samples.push(elapsed); // the first few warm the server's code paths
      }
      return { samples, bytes };
    };
    // The baseline: what each read costs the server and how long it takes, before the beats start, so nothing else is counted.
    const cpuPerRequest = new Map<string, number>();
    const quiet = new Map<string, LatencyFigures>();
    for (const route of routes) {
      for (let warm = 0; warm < 3; warm += 1) await call("GET", route, adminToken);
      const before = cpuMsOf(pid);
      const quietSamples = 30;
      for (let sample = 0; sample < quietSamples; sample += 1) await call("GET", route, adminToken);
      cpuPerRequest.set(route, (cpuMsOf(pid) - before) / quietSamples);
      quiet.set(route, figuresOf((await timedReads(route)).samples));
      // Each phase as it ends, so a run cut short still says what it measured.
      process.stderr.write(`  quiet ${route}: ${JSON.stringify(quiet.get(route))}, RSS ${memoryOf(pid).rss.toFixed(0)} MB\n`);
    }
    // Then the beats go on, spread evenly over the interval, as agents started at different times would send them.
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

    // What the beats alone cost the server, and how long each takes: two intervals with no reads.
    const quietBeats: number[] = [];
    beatSamples = quietBeats;
    const beatsBefore = beatsSent;
    const cpuBefore = cpuMsOf(pid);
    await sleep(2 * settings.beatIntervalMs);
    const cpuPerBeat = (cpuMsOf(pid) - cpuBefore) / Math.max(1, beatsSent - beatsBefore);
    const busyBeats: number[] = [];
    beatSamples = busyBeats;
    const results: AdminApiResult[] = [];
    for (const route of routes) {
      const { samples, bytes } = await timedReads(route);
      results.push({ route, quiet: quiet.get(route) ?? figuresOf([]), beating: figuresOf(samples), bytes, cpu_ms_per_request: cpuPerRequest.get(route) ?? 0 });
      process.stderr.write(`  beating ${route}: ${JSON.stringify(figuresOf(samples))}; heartbeats so far ${JSON.stringify(figuresOf(busyBeats))}, ${beatsFailed} of ${beatsSent} refused, ${connectionResets} connections reset and tried again, RSS ${memoryOf(pid).rss.toFixed(0)} MB\n`);
    }
    beatSamples = undefined;
    const memory = memoryOf(pid);
    // The beats stop before a heap snapshot: writing it stops the server for seconds, and a beat in flight then
    // (timed from its start) would be counted at that length.
    running = false;
    await beating;
    if (heapDir) {
      server.kill("SIGUSR2");
      await sleep(20_000);
    }
    const report = {
      settings,
      results,
      heartbeat: { quiet: figuresOf(quietBeats), beating: figuresOf(busyBeats) },
      rss_before_reads_mb: rssBeforeReads,
      rss_mb: memory.rss,
      peak_rss_mb: memory.peak,
      beats_sent: beatsSent,
      beats_failed: beatsFailed,
      cpu_ms_per_beat: cpuPerBeat,
      load_average: loadavg()[0] ?? 0,
    };
    return { ...report, markdown: renderAdminApi(report) };
  } catch (error) {
    // The server's own words say why a call was cut off (a crash, a refusal at start).
    throw new Error(`admin API bench: ${(error as Error).message}; server exit ${server.exitCode ?? "none yet"}; its stderr: ${serverErrors.slice(-2000) || "(empty)"}`, { cause: error });
  } finally {
    running = false;
    server.kill("SIGTERM");
    await new Promise((resolve) => (server.exitCode !== null ? resolve(undefined) : server.once("exit", resolve)));
    await dispatcher.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const meets = (value: number, goal: number) => (value < goal ? "yes" : "**no**");

/** One table per fleet size: each figure against its goal, with the baseline measured in the same run beside it. */
export function renderAdminApi(report: Omit<AdminApiReport, "markdown">): string {
  const { settings } = report;
  const goal = settings.goalP99Ms;
  const row = (what: string, baseline: LatencyFigures, measured: LatencyFigures) =>
    `| ${what} | < ${goal} ms | ${measured.p99_ms.toFixed(1)} | ${meets(measured.p99_ms, goal)} | ${baseline.p99_ms.toFixed(1)} | ${measured.p50_ms.toFixed(1)} | ${measured.max_ms.toFixed(1)} |`;
  return [
    `## Admin API at ${settings.nodes.toLocaleString("en")} nodes heartbeating and ${settings.models.toLocaleString("en")} models`,
    "",
    `${settings.nodes.toLocaleString("en")} nodes of 8 cards beat every ${settings.beatIntervalMs / 1000} s over loopback HTTP, each reporting ${settings.replicasPerNode} replicas (${(settings.nodes * settings.replicasPerNode).toLocaleString("en")} in all, one in fifty fetching, its progress moving at each beat); ${settings.samples} timed GETs per route, one after another, while the beats run. The baseline is the same reads with no beats running (and, for heartbeats, the beats with no reads running), in the same run.`,
    "",
    "| figure | goal | p99 ms while beating | meets | baseline p99 ms | p50 ms | max ms |",
    "| --- | --- | ---: | --- | ---: | ---: | ---: |",
    ...report.results.map((result) => row(`GET ${result.route}`, result.quiet, result.beating)),
    row("heartbeat", report.heartbeat.quiet, report.heartbeat.beating),
    `| heartbeats refused or unanswered in ${beatTimeoutMs / 1000} s | 0 | ${report.beats_failed} of ${report.beats_sent.toLocaleString("en")} | ${report.beats_failed === 0 ? "yes" : "**no**"} | | | |`,
    `| server RSS after the reads (MB) | < ${settings.goalRssMb} | ${report.rss_mb.toFixed(0)} | ${meets(report.rss_mb, settings.goalRssMb)} | ${report.rss_before_reads_mb.toFixed(0)} before any read | | peak ${report.peak_rss_mb.toFixed(0)} |`,
    "",
    "| route | server CPU ms per request (no beats) | answer bytes |",
    "| --- | ---: | ---: |",
    ...report.results.map((result) => `| GET ${result.route} | ${result.cpu_ms_per_request.toFixed(1)} | ${result.bytes.toLocaleString("en")} |`),
    "",
    `Server CPU per heartbeat ${report.cpu_ms_per_beat.toFixed(2)} ms (${((report.cpu_ms_per_beat * settings.nodes * 1000) / settings.beatIntervalMs / 10).toFixed(0)}% of one core at this fleet). Load average of the machine at the end: ${report.load_average.toFixed(1)} on ${cpus().length} cores (latencies include waiting for a core; CPU per request does not).`,
  ].join("\n");
}
