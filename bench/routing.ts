/**
 * `npm run bench -- routing`: which replica a request reaches decides whether
 * its prompt is read again. Three built-in llama.cpp replicas of the tiny
 * GGUF on this machine (one thread each, four slots, the prompt cache on),
 * behind one in-process gateway whose table is swapped to each policy in turn:
 * fewest in flight (`least`), the prompt start's hash (`prefix`) and the
 * scorer (`cache`), side by side on three workloads:
 *
 * 1. 8 clients, each a 10-turn conversation (each answer appended);
 * 2. 16 clients over 4 shared system prompts, short questions;
 * 3. prompts that share nothing (the control).
 *
 * Every prompt opens with the run's own tag, so no run finds another's
 * prompts in an engine's cache. Per policy: time to first token p50 and p90,
 * prompt tokens the engines evaluated (timings.prompt_n), answers a second.
 */
import { readStreamedChat } from "./stream-chat.js";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import Fastify from "fastify";
import { tinyModelGguf, writeGgufFile, type TinyModelShape } from "../src/engines/llama/tiny-gguf.js";
import { gatewayServerFactory } from "../src/gateway/front/gateway-server-factory.js";
import { registerGatewayRoutes } from "../src/gateway/front/register-gateway-routes.js";
import { openPolicy } from "../src/gateway/policy/open-policy.js";
import { Gateway } from "../src/gateway/request/gateway.js";
import { routingModel } from "../src/gateway/testing/routing-model.js";
import type { RoutingMode } from "../src/protocol/routing-table.js";
import { packageRoot } from "../src/package-root.js";
import { freePort } from "./admin-api.js";

const bin = path.join(packageRoot.directory, "bin", "llmgw.js");
const replicaCount = 3;
const slots = 4;
/** Per slot: room for a 10-turn conversation of the tiny model's byte-level tokens (about a token a character). */
const slotContext = 1536;
const answerTokens = 8;
/**
 * Wider and deeper than the tests' tiny model (64 wide, 2 layers), whose
 * prompt is read so fast that the time to first token is all queueing and
 * HTTP: 256 wide and 4 layers read a prompt slowly enough on one thread that
 * reading it again shows, as it does for a real model on a real card.
 */
const benchShape: TinyModelShape = { embedding: 256, layers: 4, heads: 8, kvHeads: 4, feedForward: 768, contextLength: 2048 };
const policies: readonly RoutingMode[] = ["least", "prefix", "cache"];
/**
 * Each workload runs this many rounds per policy, the policies' order rotated
 * each round, and the rounds are pooled: the machine is shared, and a burst of
 * someone else's work should not land on one policy alone.
 */
const rounds = 3;

/**
 * Scaled down for a 2-core machine shared with other work: the tiny model's
 * vocabulary is about a token a character, so a "system prompt" here is 600
 * tokens (not 2,000) and a conversation's turn about 60.
 */
const systemPromptChars = 600;

type Message = { role: "system" | "user" | "assistant"; content: string };

interface Turn {
  readonly firstMs: number;
  readonly evaluated: number;
  readonly cached: number;
  readonly text: string;
}

export interface PolicyResult {
  readonly policy: RoutingMode;
  readonly requests: number;
  readonly p50_ms: number;
  readonly p90_ms: number;
  readonly evaluated: number;
  readonly cached: number;
  readonly answers_per_second: number;
}

export interface WorkloadResult {
  readonly workload: string;
  readonly policies: readonly PolicyResult[];
}

export interface RoutingBenchResult {
  readonly workloads: readonly WorkloadResult[];
  readonly markdown: string;
}

function percentile(values: readonly number[], share: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * share))] ?? Number.NaN;
}

async function streamTurn(baseUrl: string, messages: readonly Message[]): Promise<Turn> {
  const started = performance.now();
  const response = await fetch(`${baseUrl}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "tiny", messages, max_tokens: answerTokens, temperature: 0, stream: true, stream_options: { include_usage: true } }),
  });
  if (!response.ok || !response.body) throw new Error(`a request failed: ${response.status} ${await response.text()}`);
  const { firstAt, text, timings } = await readStreamedChat(response.body);
  if (firstAt === undefined || timings === undefined) throw new Error("a request streamed no text or no timings");
  return { firstMs: firstAt - started, evaluated: timings.prompt_n, cached: timings.cache_n, text };
}

/** Words of a deterministic filler, different per seed, so prompts are as long as asked and share only what they should. */
function filler(seed: string, chars: number): string {
  const words = ["tide", "moon", "harbour", "current", "salt", "reef", "wave", "shore", "wind", "depth", "kelp", "storm"];
  let text = "";
  let state = [...seed].reduce((hash, char) => Math.imul(hash ^ char.charCodeAt(0), 16777619) >>> 0, 2166136261);
  while (text.length < chars) {
    state = Math.imul(state ^ (state >>> 15), 2246822507) >>> 0;
    text += `${words[state % words.length]} `;
  }
  return text.slice(0, chars);
}

type Workload = (baseUrl: string, tag: string) => Promise<Turn[]>;

/** 8 clients at once, each a 10-turn conversation. */
const conversations: Workload = async (baseUrl, tag) =>
  (
    await Promise.all(
      Array.from({ length: 8 }, async (_, client) => {
        const messages: Message[] = [];
        const turns: Turn[] = [];
        for (let turn = 1; turn <= 10; turn += 1) {
          messages.push({ role: "user", content: `${tag} client ${client}, turn ${turn}: ${filler(`${tag}/${client}/${turn}`, 50)}` });
          const answer = await streamTurn(baseUrl, messages);
          messages.push({ role: "assistant", content: answer.text });
          turns.push(answer);
        }
        return turns;
      }),
    )
  ).flat();

/** 16 clients over 4 shared system prompts, 3 short questions each. */
const sharedSystemPrompts: Workload = async (baseUrl, tag) =>
  (
    await Promise.all(
      Array.from({ length: 16 }, async (_, client) => {
        const system = `${tag} assistant ${client % 4}. ${filler(`${tag}/system/${client % 4}`, systemPromptChars)}`;
        const turns: Turn[] = [];
        for (let question = 0; question < 3; question += 1) {
          turns.push(await streamTurn(baseUrl, [{ role: "system", content: system }, { role: "user", content: `Question ${client}.${question}: ${filler(`${tag}/${client}/${question}`, 40)}` }]));
        }
        return turns;
      }),
    )
  ).flat();

/** 8 clients, 3 prompts each, sharing nothing (of about the shared workload's length). */
const nothingShared: Workload = async (baseUrl, tag) =>
  (
    await Promise.all(
      Array.from({ length: 8 }, async (_, client) => {
        const turns: Turn[] = [];
        for (let request = 0; request < 3; request += 1) {
          turns.push(await streamTurn(baseUrl, [{ role: "user", content: `${client}.${request} ${tag}: ${filler(`${tag}/${client}/${request}`, systemPromptChars)}` }]));
        }
        return turns;
      }),
    )
  ).flat();

const workloads: readonly [string, Workload][] = [
  ["1. 8 clients, 10-turn conversations", conversations],
  ["2. 16 clients, 4 shared system prompts", sharedSystemPrompts],
  ["3. prompts that share nothing", nothingShared],
];

function stopGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // already gone
  }
}

async function waitFor(what: string, withinMs: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await sleep(200);
  }
  throw new Error(`gave up waiting ${withinMs / 1000} s for ${what}`);
}

export async function routingBench(say: (line: string) => void): Promise<RoutingBenchResult> {
  const folder = mkdtempSync(path.join(tmpdir(), "llmgw-bench-routing-"));
  const model = path.join(folder, "tiny.gguf");
  await writeGgufFile(model, tinyModelGguf({ shape: benchShape }));
  const children: ChildProcess[] = [];
  const closers: (() => Promise<void>)[] = [];
  try {
    const loadAtStart = loadavg()[0] ?? 0;
    const replicas = [];
    for (let index = 0; index < replicaCount; index += 1) {
      const port = await freePort();
      const args = ["llama-engine", "--", "--model", model, "--host", "127.0.0.1", "--port", String(port), "--alias", "tiny"];
      args.push("--ctx-size", String(slotContext * slots), "--parallel", String(slots), "--n-gpu-layers", "0", "--threads", "1", "--metrics");
      children.push(spawn(process.execPath, [bin, ...args], { detached: true, stdio: "ignore", env: { ...process.env, CUDA_VISIBLE_DEVICES: "" } }));
      const url = `http://127.0.0.1:${port}`;
      await waitFor("a replica to load", 60_000, async () => (await fetch(`${url}/health`)).ok);
      replicas.push({ id: `r${index}`, endpoint: url, node: "bench", state: "ready" as const });
    }
    const gateway = new Gateway({ policy: openPolicy, reportDemand: () => undefined, environment: {}, log: { warn: () => undefined } });
    const app = Fastify({ logger: false, serverFactory: gatewayServerFactory(gateway, { warn: () => undefined }) });
    registerGatewayRoutes(app, gateway);
    const url = await app.listen({ host: "127.0.0.1", port: 0 });
    closers.push(() => app.close());
    let revision = 1;
    const results: WorkloadResult[] = [];
    for (const [name, workload] of workloads) {
      const pooled = new Map<RoutingMode, { turns: Turn[]; seconds: number }>(policies.map((policy) => [policy, { turns: [], seconds: 0 }]));
      for (let round = 0; round < rounds; round += 1) {
        for (let step = 0; step < policies.length; step += 1) {
          const policy = policies[(step + round) % policies.length] as RoutingMode;
          say(`routing: ${name}, round ${round + 1}, ${policy}...`);
          // Every prompt opens with the run's tag: neither the engines' caches nor the gateway's index hold any of it yet.
          gateway.swap({ revision: (revision += 1), models: [routingModel("tiny", { routing: policy, engine: "llamacpp", replicas })], aliases: {} });
          const started = performance.now();
          const turns = await workload(url, `[${policy}:${name.slice(0, 1)}:${round}]`);
          const entry = pooled.get(policy) as { turns: Turn[]; seconds: number };
          entry.turns.push(...turns);
          entry.seconds += (performance.now() - started) / 1000;
        }
      }
      const rows = policies.map((policy): PolicyResult => {
        const { turns, seconds } = pooled.get(policy) as { turns: Turn[]; seconds: number };
        const firsts = turns.map((turn) => turn.firstMs);
        return {
          policy,
          requests: turns.length,
          p50_ms: percentile(firsts, 0.5),
          p90_ms: percentile(firsts, 0.9),
          evaluated: turns.reduce((total, turn) => total + turn.evaluated, 0),
          cached: turns.reduce((total, turn) => total + turn.cached, 0),
          answers_per_second: turns.length / seconds,
        };
      });
      results.push({ workload: name, policies: rows });
    }
    return { workloads: results, markdown: renderRouting(results, loadAtStart) };
  } finally {
    for (const close of closers) await close().catch(() => undefined);
    for (const child of children.reverse()) stopGroup(child.pid);
    await sleep(500);
    rmSync(folder, { recursive: true, force: true });
  }
}

export function renderRouting(results: readonly WorkloadResult[], loadAtStart: number): string {
  const lines = [
    "## Routing by cache on real llama.cpp (a small GGUF, built-in engine)",
    "",
    `A random-weights llama GGUF ${benchShape.embedding} wide, ${benchShape.layers} layers; ${replicaCount} replicas, each one thread and ${slots} slots of ${slotContext} tokens with the prompt cache on, behind one gateway; streamed, temperature 0, ${answerTokens}-token answers. Scaled down for a shared 2-core machine: a shared system prompt is about ${systemPromptChars} tokens (the tiny model's vocabulary is about a token a character). ${rounds} rounds per policy, the order rotated, pooled; the machine's load average was ${loadAtStart.toFixed(1)} when the run began.`,
    "",
    "| workload | policy | requests | TTFT p50 (ms) | TTFT p90 (ms) | prompt tokens evaluated | from cache | answers/s |",
    "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
  ];
  for (const workload of results) {
    for (const row of workload.policies) {
      lines.push(
        `| ${workload.workload} | ${row.policy} | ${row.requests} | ${row.p50_ms.toFixed(0)} | ${row.p90_ms.toFixed(0)} | ${row.evaluated} | ${row.cached} | ${row.answers_per_second.toFixed(2)} |`,
      );
    }
  }
  lines.push("");
  for (const workload of results) {
    const least = workload.policies.find((row) => row.policy === "least");
    const cache = workload.policies.find((row) => row.policy === "cache");
    if (least && cache) lines.push(`- ${workload.workload}: cache's p50 TTFT is ${(least.p50_ms / Math.max(0.001, cache.p50_ms)).toFixed(2)}× better than least's.`);
  }
  return lines.join("\n");
}
