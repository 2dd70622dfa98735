/**
 * `npm run bench -- llama`: real llama.cpp on this machine's CPU, with the
 * tiny llama GGUF (src/engines/llama/tiny-gguf.ts), measured the same way
 * twice, one after the other so they do not share the cores:
 *
 * - straight to the engine: `llmgw llama-engine` started by hand with the
 *   command line the agent gives a replica;
 * - through the gateway: a server, a real agent (nothing simulated) and the
 *   replica the reconciler starts after `llmgw ctl model add`.
 *
 * Each request streams; prompt tokens/s is the prompt's tokens over the time
 * to the first token, decode tokens/s the tokens after the first over the
 * time after it (medians of a few requests). The time from `ctl model add`
 * (the command started) to the first streamed token is measured once.
 *
 * And the prompt cache (bench/llama-conversation.ts): a conversation's tenth
 * turn with and without it, straight to an engine with room for ten turns.
 */
import { readStreamedChat } from "./stream-chat.js";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { tinyModelGguf, writeGgufFile } from "../src/engines/llama/tiny-gguf.js";
import { packageRoot } from "../src/package-root.js";
import { freePort } from "./admin-api.js";
import { conversationBench, renderConversation, type ConversationResult } from "./llama-conversation.js";

const bin = path.join(packageRoot.directory, "bin", "llmgw.js");
const requests = 10;
const maxTokens = 32;
const context = 512;
// About 200 tokens of the tiny model's byte-level vocabulary.
const prompt = "The quick brown fox jumps over the lazy dog. ".repeat(4);
// Each request opens differently, so the slot's prompt cache (measured on its own below) cannot shorten
// the prompt: prompt tokens/s stays the rate of evaluating a whole prompt.
let requestNumber = 0;

export interface LlamaPathResult {
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
  readonly prompt_tokens_per_second: number;
  readonly decode_tokens_per_second: number;
}

export interface LlamaBenchResult {
  readonly direct: LlamaPathResult;
  readonly gateway: LlamaPathResult;
  readonly add_to_first_token_ms: number;
  readonly conversation: ConversationResult;
  readonly markdown: string;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

/** One streamed chat completion: when the first and last tokens came, and the usage the engine counted. */
async function streamOnce(baseUrl: string, model: string, started = performance.now()): Promise<{ firstMs: number; lastMs: number; prompt: number; completion: number } | undefined> {
  const response = await fetch(`${baseUrl}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model, messages: [{ role: "user", content: `${(requestNumber += 1)}. ${prompt}` }], max_tokens: maxTokens, temperature: 0, stream: true, stream_options: { include_usage: true } }),
  }).catch(() => undefined);
  if (!response?.ok || !response.body) return undefined;
  const { firstAt, lastAt, usage } = await readStreamedChat(response.body);
  if (firstAt === undefined || lastAt === undefined || usage === undefined) return undefined;
  return { firstMs: firstAt - started, lastMs: lastAt - started, prompt: usage.prompt_tokens, completion: usage.completion_tokens };
}

async function measure(baseUrl: string, model: string): Promise<LlamaPathResult> {
  await streamOnce(baseUrl, model); // warm-up: the first request pays for the context's first use
  const runs: NonNullable<Awaited<ReturnType<typeof streamOnce>>>[] = [];
  for (let index = 0; index < requests; index += 1) {
    const run = await streamOnce(baseUrl, model);
    if (!run) throw new Error(`a request to ${baseUrl} failed`);
    runs.push(run);
  }
  return {
    prompt_tokens: runs[0]?.prompt ?? 0,
    completion_tokens: runs[0]?.completion ?? 0,
    prompt_tokens_per_second: median(runs.map((run) => run.prompt / (run.firstMs / 1000))),
    decode_tokens_per_second: median(runs.map((run) => (run.completion - 1) / ((run.lastMs - run.firstMs) / 1000))),
  };
}

async function waitFor<T>(what: string, withinMs: number, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    const value = await check().catch(() => undefined);
    if (value !== undefined) return value;
    await sleep(100);
  }
  throw new Error(`gave up waiting ${withinMs / 1000} s for ${what}`);
}

function stopGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // already gone
  }
}

export async function llamaBench(say: (line: string) => void): Promise<LlamaBenchResult> {
  const folder = mkdtempSync(path.join(tmpdir(), "llmgw-bench-llama-"));
  const model = path.join(folder, "tiny.gguf");
  await writeGgufFile(model, tinyModelGguf());
  const children: ChildProcess[] = [];
  const enginePids: number[] = [];
  const start = (args: string[], env: Record<string, string | undefined> = {}) => {
    const child = spawn(process.execPath, [bin, ...args], { detached: true, stdio: "ignore", env: { ...process.env, CUDA_VISIBLE_DEVICES: "", ...env } });
    children.push(child);
    return child;
  };
  try {
    // Straight to the engine, with the agent's command line for one slot on 2 threads.
    say("llama: straight to the built-in engine...");
    const enginePort = await freePort();
    const engine = start(["llama-engine", "--", "--model", model, "--host", "127.0.0.1", "--port", String(enginePort), "--alias", "tiny", "--ctx-size", String(context), "--parallel", "1", "--n-gpu-layers", "0", "--threads", "2", "--metrics"]);
    const engineUrl = `http://127.0.0.1:${enginePort}`;
    await waitFor("the engine to load", 60_000, async () => ((await fetch(`${engineUrl}/health`)).ok ? true : undefined));
    const direct = await measure(engineUrl, "tiny");
    stopGroup(engine.pid);

    say("llama: a conversation's tenth turn with and without the prompt cache...");
    const longPort = await freePort();
    const long = start(["llama-engine", "--", "--model", model, "--host", "127.0.0.1", "--port", String(longPort), "--alias", "tiny", "--ctx-size", "4096", "--parallel", "1", "--n-gpu-layers", "0", "--threads", "2", "--metrics"]);
    const longUrl = `http://127.0.0.1:${longPort}`;
    await waitFor("the engine to load", 60_000, async () => ((await fetch(`${longUrl}/health`)).ok ? true : undefined));
    const conversation = await conversationBench(longUrl);
    stopGroup(long.pid);

    say("llama: through a server, an agent and the gateway...");
    const port = await freePort();
    const dataDir = path.join(folder, "server");
    writeFileSync(path.join(folder, "server.yaml"), "gateway:\n  auth: open\nreconcile:\n  interval: 200ms\n");
    start(["server", "-c", path.join(folder, "server.yaml"), "--data-dir", dataDir, "--listen", `127.0.0.1:${port}`, "--log-level", "error"]);
    const url = `http://127.0.0.1:${port}`;
    const token = await waitFor("the server", 60_000, async () => {
      const text = readFileSync(path.join(dataDir, "admin-token"), "utf8").trim();
      return text !== "" && (await fetch(`${url}/api/v1/nodes`, { headers: { authorization: `Bearer ${text}` } })).ok ? text : undefined;
    });
    const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
    const join = ((await (await fetch(`${url}/api/v1/node-tokens`, { method: "POST", headers, body: "{}" })).json()) as { token: string }).token;
    start(["agent", "--server", url, "--name", "bench-cpu", "--data-dir", path.join(folder, "agent")], { LLMGW_JOIN_TOKEN: join, LLMGW_SERVER: undefined, LLMGW_TOKEN: undefined });
    await waitFor("the agent to join", 60_000, async () => {
      const nodes = ((await (await fetch(`${url}/api/v1/nodes`, { headers })).json()) as { nodes: { state: string }[] }).nodes;
      return nodes.some((node) => node.state === "ready") ? true : undefined;
    });
    const entry = path.join(folder, "tiny.yaml");
    writeFileSync(entry, `name: tiny\ncontext: ${context}\nprofiles:\n  - { engine: llamacpp, source: "${model}", memory_gb: 1, cpu_cores: 2, slots: 1 }\n`);
    const added = performance.now();
    start(["ctl", "model", "add", "-f", entry], { LLMGW_SERVER: url, LLMGW_TOKEN: token });
    const firstToken = await waitFor("the first token through the gateway", 120_000, async () => {
      const run = await streamOnce(url, "tiny", added);
      return run?.firstMs;
    });
    const gateway = await measure(url, "tiny");
    // The agent's engine is in a process group of its own and outlives the agent, as it must on a real
    // node: the bench stops it by its pid, or every run would leave one more engine spinning on the cores.
    const replicas = ((await (await fetch(`${url}/api/v1/replicas`, { headers })).json()) as { replicas: { pid: number | null }[] }).replicas;
    for (const replica of replicas) if (replica.pid !== null) enginePids.push(replica.pid);
    const result = { direct, gateway, add_to_first_token_ms: firstToken, conversation };
    return { ...result, markdown: renderLlama(result) };
  } finally {
    for (const child of children.reverse()) stopGroup(child.pid);
    for (const pid of enginePids) stopGroup(pid);
    await sleep(500);
    rmSync(folder, { recursive: true, force: true });
  }
}

function renderLlama(result: Omit<LlamaBenchResult, "markdown">): string {
  const row = (name: string, run: LlamaPathResult) =>
    `| ${name} | ${run.prompt_tokens} | ${run.prompt_tokens_per_second.toFixed(0)} | ${run.completion_tokens} | ${run.decode_tokens_per_second.toFixed(0)} |`;
  return [
    "## Real llama.cpp on the CPU (the tiny GGUF, built-in engine)",
    "",
    `Streamed chat completions, temperature 0, ${maxTokens} tokens, one slot on 2 threads; medians of ${requests} requests after a warm-up.`,
    "",
    "| path | prompt tokens | prompt tokens/s | completion tokens | decode tokens/s |",
    "| --- | ---: | ---: | ---: | ---: |",
    row("straight to the engine", result.direct),
    row("through the gateway", result.gateway),
    "",
    `From \`llmgw ctl model add\` (the command started) to the first streamed token through the gateway: ${(result.add_to_first_token_ms / 1000).toFixed(1)} s.`,
    "",
    renderConversation(result.conversation),
  ].join("\n");
}
