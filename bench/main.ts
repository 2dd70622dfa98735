/**
 * `npm run bench`: what llmgw can measure about itself today, side by side in
 * one run, written as Markdown (stdout and bench/results/bench.md) and JSON
 * (bench/results/bench.json).
 *
 * - Planner error against the calibration table: predicted vs
 *   published sizes for every fixture model.
 * - Planner time per model as the fleet grows, 10 → 1,000 nodes: the planner
 *   runs on every `ctl model plan` and, later, inside placement, so it must stay
 *   cheap as the fleet grows. Medians of repeated runs, on this machine.
 *
 * - Placement time for 100, 300 and 1,000 nodes of eight cards with 1,000
 *   and 10,000 replicas: the reconciler places every cycle, so a full
 *   placement must stay well under its period on a large fleet.
 *
 * - The admin API at 500 nodes heartbeating and 2,000 models (bench/admin-api.ts):
 *   p50/p99 of the fleet and model lists, CPU per request, and the server's RSS.

 * - Gateway overhead (bench/gateway/gateway-overhead.ts): added latency and
 *   the throughput ceiling of llmgw's /v1 and of nginx against a direct call
 *   to the same backend.
 *
 * - The web console (bench/console.ts): gzipped JavaScript of the first page,
 *   and the time until /models is usable with 2,000 models, in headless Chromium.
 *
 * - Real llama.cpp on the CPU (bench/llama.ts): prompt and decode tokens/s of
 *   the tiny GGUF straight to the built-in engine and through the gateway,
 *   and the time from `ctl model add` to the first token.
 *
 * - Routing by cache (bench/routing.ts): three built-in llama.cpp replicas
 *   behind one gateway, fewest-in-flight, prefix hash and the cache scorer
 *   side by side on conversations, shared system prompts and unshared prompts.
 *
 * - The CLI's start (bench/cli.ts): `llmgw ctl models` against a running
 *   server and `llmgw --help`, beside `node -e 0`.
 *
 * `npm run bench -- gateway` (or planner, placement, admin, console, llama, routing, cli) runs only the named sections.
 */
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { architectureFromConfig } from "../src/plan/architecture.js";
import { calibrationRows, type CalibrationRow } from "../src/plan/calibration.js";
import { planCandidates, type ModelFacts } from "../src/plan/index.js";
import { inventoryFacts } from "../src/plan/inventory-facts.js";
import { fleetFromHardwareSpec } from "../src/fleet/pools.js";
import { parseHardwareSpec } from "../src/fleet/hardware-spec.js";
import { packageRoot } from "../src/package-root.js";
import { placeReplicas } from "../src/placement/index.js";
import { benchDemands, benchFleet } from "./placement-workload.js";
import { adminApiBench, defaultAdminApiSettings, largeAdminApiSettings } from "./admin-api.js";
import { consoleBench } from "./console.js";
import { llamaBench } from "./llama.js";
import { routingBench } from "./routing.js";
import { cliBench } from "./cli.js";
import { availableParallelism } from "node:os";
import { defaultGatewayOverheadSettings, renderGatewayOverhead, runGatewayOverhead, type GatewayOverheadResults } from "./gateway/gateway-overhead.js";

const fixturesFolder = path.join(packageRoot.directory, "src", "plan", "fixtures");
const fixtures = readdirSync(fixturesFolder).sort();
const architectureOf = (fixture: string) =>
  architectureFromConfig(JSON.parse(readFileSync(path.join(fixturesFolder, fixture, "config.json"), "utf8")), `${fixture}/config.json`);

function percent(value: number): string {
  return `${(value * 100).toFixed(2)}%`;
}

function gb(bytes: number): string {
  return (bytes / 1e9).toFixed(2);
}

function calibration(): { rows: CalibrationRow[]; markdown: string } {
  const rows = calibrationRows(architectureOf);
  const lines = [
    "## Planner error against published sizes",
    "",
    "| model | quantity | predicted | published | error | tolerance |",
    "| --- | --- | ---: | ---: | ---: | ---: |",
    ...rows.map((row) =>
      row.quantity === "kv_bytes_per_token"
        ? `| ${row.fixture} | KV bytes/token | ${row.predicted} | ${row.published} | ${percent(row.error)} | exact |`
        : `| ${row.fixture} | ${row.quantity} (GB) | ${gb(row.predicted)} | ${gb(row.published)} | ${percent(row.error)} | ${percent(row.tolerance)} |`,
    ),
  ];
  const worst = rows.reduce((max, row) => Math.max(max, Math.abs(row.error)), 0);
  lines.push("", `Largest error: ${percent(worst)} over ${rows.length} rows.`);
  return { rows, markdown: lines.join("\n") };
}

/** A mixed fleet of `nodes` nodes: H100 boxes on two fabrics, L40S boxes, each with host memory for CPU candidates. */
function fleetOf(nodes: number) {
  const groups: string[] = [];
  for (let index = 0; index < nodes; index += 1) {
    groups.push(index % 3 === 0 ? `8xH100-80GB@nvl${index % 2}` : index % 3 === 1 ? "4xL40S-48GB@pcie" : "2xA100-80GB@pcie");
  }
  return fleetFromHardwareSpec(parseHardwareSpec(`${groups.join(",")},cpu:64c/512g`));
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

function plannerTiming(): { results: { nodes: number; median_ms_per_model: number; candidates: number }[]; markdown: string } {
  const facts: ModelFacts[] = fixtures.map((fixture) => inventoryFacts(fixture, architectureOf(fixture), `${fixture}/config.json`));
  const results = [];
  for (const nodes of [10, 100, 1000]) {
    const fleet = fleetOf(nodes);
    const samples: number[] = [];
    let candidates = 0;
    // Bounded: 5 rounds over every fixture model.
    for (let round = 0; round < 5; round += 1) {
      for (const model of facts) {
        const started = performance.now();
        candidates = planCandidates(model, fleet, { context: 8192 }).candidates.length;
        samples.push(performance.now() - started);
      }
    }
    results.push({ nodes, median_ms_per_model: median(samples), candidates });
  }
  const markdown = [
    "## Planner time per model as the fleet grows",
    "",
    "| nodes | median ms per model | candidates per model (last) |",
    "| ---: | ---: | ---: |",
    ...results.map((result) => `| ${result.nodes} | ${result.median_ms_per_model.toFixed(3)} | ${result.candidates} |`),
    "",
    `Ratio 1,000 nodes / 10 nodes: ${((results[2]?.median_ms_per_model ?? 0) / (results[0]?.median_ms_per_model || 1)).toFixed(2)}× (pools, not nodes, drive the work: a pool groups every node of one class, fabric and card size).`,
  ].join("\n");
  return { results, markdown };
}

interface PlacementTiming {
  readonly nodes: number;
  readonly replicas: number;
  /** "one-node", or "gangs": a tenth of the models over two nodes, on fabrics of 16 nodes. */
  readonly workload: "one-node" | "gangs";
  readonly median_ms: number;
  readonly fastest_ms: number;
  readonly placed: number;
  readonly unplaced: number;
}

function placementTiming(): { results: PlacementTiming[]; markdown: string } {
  const results: PlacementTiming[] = [];
  const runs: { nodes: number; replicas: number; workload: PlacementTiming["workload"] }[] = [];
  for (const nodes of [100, 300, 1000]) for (const replicas of [1000, 10_000]) runs.push({ nodes, replicas, workload: "one-node" });
  for (const replicas of [1000, 10_000]) runs.push({ nodes: 1000, replicas, workload: "gangs" });
  for (const { nodes, replicas, workload } of runs) {
    const fleet = benchFleet(nodes, workload === "gangs" ? 16 : undefined);
    const demands = benchDemands(replicas, workload === "gangs");
    // One warm-up run so the JIT has compiled the hot path, then 7 timed runs.
    let result = placeReplicas(fleet, demands);
    const samples: number[] = [];
    for (let round = 0; round < 7; round += 1) {
      const started = performance.now();
      result = placeReplicas(fleet, demands);
      samples.push(performance.now() - started);
    }
    const unplaced = result.refusals.reduce((sum, refusal) => sum + refusal.unplaced, 0);
    results.push({ nodes, replicas, workload, median_ms: median(samples), fastest_ms: Math.min(...samples), placed: result.placements.length, unplaced });
  }
  const largest = results.find((result) => result.nodes === 1000 && result.replicas === 10_000 && result.workload === "one-node");
  const smallest = results.find((result) => result.nodes === 100 && result.replicas === 1000 && result.workload === "one-node");
  const markdown = [
    "## Placement time",
    "",
    "Nodes of 8 × H100-80GB (one NVLink fabric each), nothing running; models of 1–4 replicas on 1, 2, 4 or 8 cards (small ones fall back to a CPU profile), three classes. Replicas beyond the fleet's cards are refused with their reason, which is part of the time.",
    "",
    "Rows marked gangs: the nodes share InfiniBand fabrics of 16, and one model in ten runs each replica over two 8-card nodes (a gang, placed all or nothing).",
    "",
    "| nodes | replicas | workload | median ms | fastest ms | placed | refused |",
    "| ---: | ---: | --- | ---: | ---: | ---: | ---: |",
    ...results.map((result) => `| ${result.nodes} | ${result.replicas} | ${result.workload} | ${result.median_ms.toFixed(1)} | ${result.fastest_ms.toFixed(1)} | ${result.placed} | ${result.unplaced} |`),
    "",
    `10,000 replicas on 1,000 nodes against 1,000 on 100 (ten times both): ${((largest?.median_ms ?? 0) / (smallest?.median_ms || 1)).toFixed(1)}× the median time, ${((largest?.fastest_ms ?? 0) / (smallest?.fastest_ms || 1)).toFixed(1)}× the fastest (linear would be 10×; on a busy machine the fastest run is the steadier figure).`,
  ].join("\n");
  return { results, markdown };
}

// `npm run bench -- gateway` (or planner, placement, admin, admin-small, admin-large, console, llama, routing, cli) runs only the named sections; no name runs them all.
const wanted = new Set(process.argv.slice(2));
const runs = (section: string) => wanted.size === 0 || wanted.has(section);

const startedAt = new Date().toISOString();
const calibrationResult = runs("planner") ? calibration() : undefined;
const timing = runs("planner") ? plannerTiming() : undefined;
const placement = runs("placement") ? placementTiming() : undefined;
// `admin` runs both fleet sizes; `admin-small` only the 500-node one, `admin-large` only the 1,000-node one.
const adminSizes = runs("admin")
  ? [defaultAdminApiSettings, largeAdminApiSettings]
  : [...(wanted.has("admin-small") ? [defaultAdminApiSettings] : []), ...(wanted.has("admin-large") ? [largeAdminApiSettings] : [])];
const adminApi = [];
for (const settings of adminSizes) {
  process.stderr.write(`Admin API at ${settings.nodes} nodes and ${settings.models} models...\n`);
  adminApi.push(await adminApiBench(settings));
}
const consoleResult = runs("console") ? await consoleBench() : undefined;
const llama = runs("llama") ? await llamaBench((line) => process.stderr.write(`${line}\n`)) : undefined;
const routing = runs("routing") ? await routingBench((line) => process.stderr.write(`${line}\n`)) : undefined;
const cli = runs("cli") ? await cliBench() : undefined;
let gateway: GatewayOverheadResults | undefined;
if (runs("gateway")) {
  process.stderr.write("Gateway overhead (about 4 minutes)...\n");
  gateway = await runGatewayOverhead(defaultGatewayOverheadSettings, (line) => process.stderr.write(`${line}\n`));
}
const markdown = [
  `# llmgw benchmark, ${startedAt}`,
  "",
  `Node ${process.version}, llmgw ${packageRoot.manifest.version}, ${availableParallelism()} cores.`,
  "",
  ...(calibrationResult ? [calibrationResult.markdown, ""] : []),
  ...(timing ? [timing.markdown, ""] : []),
  ...(placement ? [placement.markdown, ""] : []),
  ...adminApi.flatMap((report) => [report.markdown, ""]),
  ...(consoleResult ? [consoleResult.markdown, ""] : []),
  ...(llama ? [llama.markdown, ""] : []),
  ...(routing ? [routing.markdown, ""] : []),
  ...(cli ? [cli.markdown, ""] : []),
  ...(gateway ? [renderGatewayOverhead(gateway), ""] : []),
].join("\n");
const resultsFolder = path.join(packageRoot.directory, "bench", "results");
mkdirSync(resultsFolder, { recursive: true });
writeFileSync(path.join(resultsFolder, "bench.md"), markdown);
writeFileSync(
  path.join(resultsFolder, "bench.json"),
  JSON.stringify(
    {
      started_at: startedAt,
      node: process.version,
      calibration: calibrationResult?.rows,
      planner_timing: timing?.results,
      placement_timing: placement?.results,
      admin_api: adminApi.length > 0 ? adminApi.map((report) => ({ ...report, markdown: undefined })) : undefined,
      console: consoleResult ? { ...consoleResult, markdown: undefined } : undefined,
      llama: llama ? { ...llama, markdown: undefined } : undefined,
      routing: routing?.workloads,
      cli: cli ? { ...cli, markdown: undefined } : undefined,
      gateway_overhead: gateway,
    },
    null,
    2,
  ),
);
process.stdout.write(markdown);
