/**
 * Gateway overhead (`npm run bench`, or alone: `npm run bench -- gateway`).
 *
 * One backend (fixed-chat-backend.ts, its own process) and the ways to
 * reach it, measured with the same load in one run on this machine:
 *   direct    the client calls the backend itself;
 *   llmgw     through `llmgw server`'s /v1 (a gateway key on every call, an
 *             external model whose base_url is the backend): one process;
 *   llmgw-disk  the same server with `gateway.usage_sync: disk`: each
 *             answer's usage synced to disk before its last byte (the
 *             default writes it without the sync);
 *   llmgw-w2  through `llmgw gateway --workers 2` following that server
 *             (the same key): a primary and two workers sharing the port;
 *   nginx     through Debian's nginx, one worker, as a plain reverse proxy;
 *   nginx-w2  the same with two workers (a master, two workers, reuseport);
 *   node-pipe node's floor: a process that pipes each connection's bytes to
 *             the backend untouched (pipe-proxy.ts), no HTTP parsed.
 * Throughput is what each side reached on this machine, whose two cores
 * the load tool and the backend share with the proxy; CPU per request is
 * counted over all the side's processes, so requests per CPU-second compare
 * the proxies per core whatever the machine leaves them.
 * Fixed rates (500 and 2,000 requests/s, open loop, latency from when each
 * request was due) and the saturation point (wrk, closed loop), streaming
 * and not. Everything on loopback; every process started here is stopped here.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startProcess, type StartedProcess } from "./child-process.js";
import { freePort, startNginx } from "./nginx-proxy.js";
import { runFixedRate, summarise, type FixedRateResult, type FixedRateRun } from "./open-loop-load.js";
import { runWrk, type SaturationResult } from "./wrk-saturation.js";
import { processTreeCpuMs } from "./process-cpu.js";
import { renderGatewayGoals } from "./gateway-goals.js";

const here = path.dirname(fileURLToPath(import.meta.url));
// LLMGW_BENCH_LLMGW points at another build's bin/llmgw.js, to measure a candidate change against this one.
const llmgwBin = process.env.LLMGW_BENCH_LLMGW ?? path.resolve(here, "..", "..", "..", "bin", "llmgw.js");

// LLMGW_BENCH_BASELINE points at another build's bin/llmgw.js, measured as the side "baseline" in the same run (a before/after of a change).
const baselineBin = process.env.LLMGW_BENCH_BASELINE;

type SideName = "direct" | "llmgw" | "llmgw-disk" | "llmgw-w2" | "baseline" | "nginx" | "nginx-w2" | "node-pipe";

interface Side {
  readonly name: SideName;
  readonly origin: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  /** The process whose CPU is counted, with its children: the proxy's, or the backend's for direct. */
  readonly pid: number;
}

export interface GatewayOverheadSettings {
  readonly rates: readonly number[];
  /**
   * Each measurement is this many rounds, the sides taking turns within a
   * round: on a shared, noisy machine a slow moment then falls on every side
   * alike instead of on whichever ran during it.
   */
  readonly rounds: number;
  /** How long each side is warmed up at the highest rate, per body (JSON, streams), before the first round. */
  readonly warmUpMs: number;
  readonly fixedRateMsPerRound: number;
  readonly saturationSPerRound: number;
  readonly saturationConnections: number;
}

export const defaultGatewayOverheadSettings: GatewayOverheadSettings = { rates: [500, 2000], rounds: 3, warmUpMs: 3000, fixedRateMsPerRound: 1000, saturationSPerRound: 2, saturationConnections: 50 };

export interface GatewayOverheadResults {
  readonly settings: GatewayOverheadSettings;
  /** Why a side was left out (the llmgw gateway when /v1 does not answer). */
  readonly skipped: Partial<Record<SideName, string>>;
  /** `round_p99_ms`: each round's own p99, in order, to tell a figure that holds in every round from one that holds over their sum. */
  readonly fixed_rate: { side: SideName; stream: boolean; rate: number; result: FixedRateResult; round_p99_ms: number[] }[];
  /**
   * `cpu_us_per_request`: CPU the side's own processes spent per answer at saturation (the backend's for direct),
   * median of the rounds; `user_cpu_us_per_request` the part of it in their own code, outside the kernel (median too).
   */
  readonly saturation: { side: SideName; stream: boolean; result: SaturationResult; cpu_us_per_request: number; user_cpu_us_per_request: number }[];
}

const bodyFor = (stream: boolean) =>
  JSON.stringify({ model: "bench", messages: [{ role: "user", content: "Say hello." }], max_tokens: 16, ...(stream ? { stream: true } : {}) });

async function startLlmgw(folder: string, backendPort: number, bin = llmgwBin, name: SideName = "llmgw", extraYaml = ""): Promise<{ process: StartedProcess; side: Side; adminToken: string }> {
  folder = path.join(folder, name);
  mkdirSync(folder, { recursive: true });
  const config = path.join(folder, "server.yaml");
  writeFileSync(config, `${extraYaml}models:\n  - name: bench\n    external:\n      base_url: http://127.0.0.1:${backendPort}/v1\n`);
  const dataDir = path.join(folder, "llmgw-data");
  const port = await freePort();
  const server = await startProcess(process.execPath, [bin, "server", "-c", config, "--listen", `127.0.0.1:${port}`, "--data-dir", dataDir], /listening on (http:\/\/\S+)/);
  try {
    const origin = `http://127.0.0.1:${port}`;
    const admin = readFileSync(path.join(dataDir, "admin-token"), "utf8").trim();
    const created = await fetch(`${origin}/api/v1/keys`, { method: "POST", headers: { authorization: `Bearer ${admin}`, "content-type": "application/json" }, body: JSON.stringify({ name: "bench" }) });
    if (created.status !== 201) throw new Error(`creating the bench's gateway key answered ${created.status}: ${await created.text()}`);
    const { key } = (await created.json()) as { key: string };
    return {
      process: server,
      side: { name, origin, path: "/v1/chat/completions", headers: { "content-type": "application/json", authorization: `Bearer ${key}` }, pid: server.child.pid as number },
      adminToken: admin,
    };
  } catch (error) {
    await server.stop();
    throw error;
  }
}

/** `llmgw gateway --workers N` following a running llmgw server; the server's gateway key works here too. */
async function startLlmgwWorkers(server: Side, adminToken: string, workers: number): Promise<{ process: StartedProcess; side: Side }> {
  const port = await freePort();
  const gateway = await startProcess(process.execPath, [llmgwBin, "gateway", "--server", server.origin, "--listen", `127.0.0.1:${port}`, "--workers", String(workers)], /listening on (http:\/\/\S+) with/, {
    env: { ...process.env, LLMGW_TOKEN: adminToken },
  });
  return { process: gateway, side: { ...server, name: `llmgw-w${workers}` as SideName, origin: `http://127.0.0.1:${port}`, pid: gateway.child.pid as number } };
}

/** One request through the side, as the load will send it: a side that cannot answer it is left out, with the reason. */
async function probe(side: Side): Promise<string | undefined> {
  for (const stream of [false, true]) {
    const answer = await fetch(`${side.origin}${side.path}`, { method: "POST", headers: side.headers, body: bodyFor(stream) }).catch((error: unknown) => error as Error);
    if (answer instanceof Error) return `${side.name}: ${answer.message}`;
    const text = await answer.text();
    if (answer.status !== 200) return `POST ${side.path}${stream ? " (stream)" : ""} answered ${answer.status}: ${text.slice(0, 200)}`;
    if (stream && !text.trimEnd().endsWith("data: [DONE]")) return `the stream did not end with data: [DONE]: ${text.slice(-200)}`;
  }
  return undefined;
}

export async function runGatewayOverhead(settings: GatewayOverheadSettings = defaultGatewayOverheadSettings, log: (line: string) => void = () => undefined): Promise<GatewayOverheadResults> {
  const folder = mkdtempSync(path.join(tmpdir(), "llmgw-bench-gateway-"));
  const processes: StartedProcess[] = [];
  const skipped: Partial<Record<SideName, string>> = {};
  try {
    const backend = await startProcess(process.execPath, [path.join(here, "fixed-chat-backend.js")], /listening (\d+)/);
    processes.push(backend);
    const backendPort = Number(backend.match[1]);
    const json = { "content-type": "application/json" };
    const sides: Side[] = [{ name: "direct", origin: `http://127.0.0.1:${backendPort}`, path: "/v1/chat/completions", headers: json, pid: backend.child.pid as number }];
    try {
      const llmgw = await startLlmgw(folder, backendPort);
      processes.push(llmgw.process);
      sides.push(llmgw.side);
      try {
        const workers = await startLlmgwWorkers(llmgw.side, llmgw.adminToken, 2);
        processes.push(workers.process);
        sides.push(workers.side);
      } catch (error) {
        skipped["llmgw-w2"] = (error as Error).message.split("\n")[0];
      }
    } catch (error) {
      skipped.llmgw = (error as Error).message.split("\n")[0];
    }
    try {
      const synced = await startLlmgw(folder, backendPort, llmgwBin, "llmgw-disk", "gateway:\n  usage_sync: disk\n");
      processes.push(synced.process);
      sides.push(synced.side);
    } catch (error) {
      skipped["llmgw-disk"] = (error as Error).message.split("\n")[0];
    }
    if (baselineBin !== undefined) {
      try {
        const baseline = await startLlmgw(folder, backendPort, baselineBin, "baseline");
        processes.push(baseline.process);
        sides.push(baseline.side);
      } catch (error) {
        skipped.baseline = (error as Error).message.split("\n")[0];
      }
    }
    for (const workers of [1, 2]) {
      const nginx = await startNginx(path.join(folder, `nginx-w${workers}`), backendPort, workers);
      processes.push(nginx);
      sides.push({ name: workers === 1 ? "nginx" : "nginx-w2", origin: `http://127.0.0.1:${nginx.port}`, path: "/v1/chat/completions", headers: json, pid: nginx.child.pid as number });
    }
    const pipe = await startProcess(process.execPath, [path.join(here, "pipe-proxy.js"), String(backendPort)], /listening (\d+)/);
    processes.push(pipe);
    sides.push({ name: "node-pipe", origin: `http://127.0.0.1:${Number(pipe.match[1])}`, path: "/v1/chat/completions", headers: json, pid: pipe.child.pid as number });

    const usable: Side[] = [];
    for (const side of sides) {
      const problem = await probe(side);
      if (problem) skipped[side.name] = problem;
      else usable.push(side);
    }

    // Warm-up: connections opened and the proxies' code compiled before anything counts, at the highest rate
    // measured. A node process is still compiling its hot path after a second at 1,000 requests/s: the first
    // round at 2,000 then carried its warm-up (p99 5 to 20 ms where the next rounds had 2 to 3), a cost a
    // gateway pays once when it starts, not on every second of its life.
    for (const side of usable) {
      for (const stream of [false, true]) await runFixedRate({ origin: side.origin, path: side.path, headers: side.headers, body: bodyFor(stream), requestsPerSecond: Math.max(...settings.rates), durationMs: settings.warmUpMs });
    }
    const fixedRate: GatewayOverheadResults["fixed_rate"] = [];
    const saturation: GatewayOverheadResults["saturation"] = [];
    for (const stream of [false, true]) {
      const body = bodyFor(stream);
      for (const rate of settings.rates) {
        const runs = new Map<SideName, FixedRateRun[]>(usable.map((side) => [side.name, []]));
        for (let round = 0; round < settings.rounds; round += 1) {
          for (const side of usable) {
            const run = await runFixedRate({ origin: side.origin, path: side.path, headers: side.headers, body, requestsPerSecond: rate, durationMs: settings.fixedRateMsPerRound, ...(stream ? { mustEndWith: "data: [DONE]" } : {}) });
            runs.get(side.name)?.push(run);
          }
        }
        for (const side of usable) {
          const sideRuns = runs.get(side.name) ?? [];
          const result = summarise(sideRuns);
          fixedRate.push({ side: side.name, stream, rate, result, round_p99_ms: sideRuns.map((run) => summarise([run]).p99Ms) });
          log(`  ${side.name.padEnd(8)} ${stream ? "stream" : "json  "} ${rate}/s: p50 ${result.p50Ms.toFixed(3)} ms, p99 ${result.p99Ms.toFixed(3)} ms, errors ${result.errors}, dropped ${result.dropped}`);
        }
      }
      const ceilings = new Map<SideName, { result: SaturationResult; cpuUs: number; userUs: number }[]>(usable.map((side) => [side.name, []]));
      for (let round = 0; round < settings.rounds; round += 1) {
        for (const side of usable) {
          const cpuBefore = processTreeCpuMs(side.pid);
          const result = await runWrk(folder, `${side.origin}${side.path}`, body, side.headers, { connections: settings.saturationConnections, durationS: settings.saturationSPerRound });
          const cpuAfter = processTreeCpuMs(side.pid);
          const perRequest = (ms: number) => (ms * 1000) / Math.max(1, result.requests);
          ceilings.get(side.name)?.push({
            result,
            cpuUs: perRequest(cpuAfter.user + cpuAfter.system - cpuBefore.user - cpuBefore.system),
            userUs: perRequest(cpuAfter.user - cpuBefore.user),
          });
        }
      }
      for (const side of usable) {
        const rounds = ceilings.get(side.name) ?? [];
        // The median round: one lucky or starved round does not decide the ceiling.
        const result = (rounds.map((round) => round.result).sort((left, right) => left.requestsPerSecond - right.requestsPerSecond)[Math.floor(rounds.length / 2)]) as SaturationResult;
        const median = (values: number[]) => values.sort((left, right) => left - right)[Math.floor(values.length / 2)] as number;
        const cpuUs = median(rounds.map((round) => round.cpuUs));
        const userUs = median(rounds.map((round) => round.userUs));
        saturation.push({ side: side.name, stream, result, cpu_us_per_request: cpuUs, user_cpu_us_per_request: userUs });
        log(`  ${side.name.padEnd(8)} ${stream ? "stream" : "json  "} saturation: ${result.requestsPerSecond.toFixed(0)}/s (rounds ${rounds.map((round) => round.result.requestsPerSecond.toFixed(0)).join(", ")}), CPU ${cpuUs.toFixed(0)} µs/request (user ${userUs.toFixed(0)})`);
      }
    }
    return { settings, skipped, fixed_rate: fixedRate, saturation };
  } finally {
    for (const started of processes.reverse()) await started.stop();
    rmSync(folder, { recursive: true, force: true });
  }
}

const ms = (value: number) => (Number.isFinite(value) ? value.toFixed(3) : "-");
const signedMs = (value: number) => (Number.isFinite(value) ? `${value >= 0 ? "+" : ""}${value.toFixed(3)}` : "-");

/** The Markdown section: added latency and throughput of each proxy against direct. */
export function renderGatewayOverhead(results: GatewayOverheadResults): string {
  const lines = ["## Gateway overhead", ""];
  lines.push(
    `Same backend, same load, one run; each side warmed up for ${results.settings.warmUpMs / 1000} s at ${Math.max(...results.settings.rates).toLocaleString("en-US")} requests/s, then ${results.settings.rounds} rounds with the sides taking turns. Fixed rates: open loop on undici, ` +
      `${results.settings.fixedRateMsPerRound} ms per round, latency counted from when each request was due (ms). Saturation: wrk, 1 thread, ` +
      `${results.settings.saturationConnections} connections, ${results.settings.saturationSPerRound} s per round, the median round. Added = side − direct at the same rate.`,
    "",
    "| side | body | rate/s | p50 | p99 | added p50 | added p99 | errors | dropped |",
    "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
  );
  for (const row of results.fixed_rate) {
    const direct = results.fixed_rate.find((other) => other.side === "direct" && other.stream === row.stream && other.rate === row.rate)?.result;
    const added = (value: number, base: number | undefined) => (row.side === "direct" || base === undefined ? "" : signedMs(value - base));
    lines.push(
      `| ${row.side} | ${row.stream ? "stream" : "json"} | ${row.rate} | ${ms(row.result.p50Ms)} | ${ms(row.result.p99Ms)} | ${added(row.result.p50Ms, direct?.p50Ms)} | ${added(row.result.p99Ms, direct?.p99Ms)} | ${row.result.errors} | ${row.result.dropped} |`,
    );
  }
  lines.push(
    "",
    "CPU µs/request: what the side's processes spent per answer at saturation, all of them (nginx's master and workers, the gateway's primary and workers; the backend's for direct). " +
      "User µs/request is the part of it spent outside the kernel, in the side's own code; the rest is the kernel's, mostly the sockets' reads and writes, which every proxy pays alike. " +
      "Requests per CPU-second (1,000,000 / that) is the side's ceiling per core: on a shared machine it moves far less than throughput does. " +
      "× nginx compares with nginx's one worker; per core × nginx is nginx's CPU per request over the side's.",
    "",
    "| side | body | max requests/s | × direct | × nginx | p99 at max (ms) | CPU µs/request | user µs/request | requests per CPU-second | per core × nginx | errors |",
    "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
  );
  for (const row of results.saturation) {
    const of = (side: SideName) => results.saturation.find((other) => other.side === side && other.stream === row.stream)?.result.requestsPerSecond;
    const ratio = (base: number | undefined) => (base ? `${(row.result.requestsPerSecond / base).toFixed(2)}×` : "-");
    const nginxCpu = results.saturation.find((other) => other.side === "nginx" && other.stream === row.stream)?.cpu_us_per_request;
    const perCore = row.side === "direct" || !nginxCpu ? "" : `${(nginxCpu / row.cpu_us_per_request).toFixed(2)}×`;
    lines.push(
      `| ${row.side} | ${row.stream ? "stream" : "json"} | ${row.result.requestsPerSecond.toFixed(0)} | ${ratio(of("direct"))} | ${ratio(of("nginx"))} | ${ms(row.result.p99Ms)} | ${row.cpu_us_per_request.toFixed(0)} | ${row.user_cpu_us_per_request.toFixed(0)} | ${(1_000_000 / row.cpu_us_per_request).toFixed(0)} | ${perCore} | ${row.result.errors} |`,
    );
  }
  lines.push(
    "",
    "### Against the goals",
    "",
    "One llmgw process (the side llmgw) against nginx's one worker, from the tables above. node-pipe is shown for what node itself allows on this machine: it parses nothing, so what llmgw costs above it is llmgw's own.",
    "",
    ...renderGatewayGoals(results),
  );
  for (const [side, reason] of Object.entries(results.skipped)) lines.push("", `Left out: ${side} — ${reason}`);
  return lines.join("\n");
}
