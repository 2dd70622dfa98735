import { writeFile } from "node:fs/promises";
import path from "node:path";
import type { EngineName } from "../../src/catalog/schema.js";
import type { EngineDriver, EngineLaunchInput } from "../../src/engines/driver.js";

/**
 * A tiny engine for agent tests: a Node script that loads (sleeps), serves
 * /health, /metrics in vLLM's names and /slow, and misbehaves on request
 * (FAKE_ENGINE_MODE): crash while loading, never become healthy, ignore
 * SIGTERM, keep a worker process in its group as vLLM does per card, or
 * keep one that left the group (escaped-worker: a setsid worker that ignores
 * SIGTERM, as a launcher that daemonizes its workers leaves them).
 */
export const fakeEngineSource = `
import http from "node:http";
import { spawn } from "node:child_process";
const args = process.argv.slice(2);
const port = Number(args[args.indexOf("--port") + 1]);
const mode = process.env.FAKE_ENGINE_MODE ?? "ok";
const loadMs = Number(process.env.FAKE_ENGINE_LOAD_MS ?? 100);
console.log("fake engine pid " + process.pid + " loading on port " + port + " CUDA_VISIBLE_DEVICES=" + process.env.CUDA_VISIBLE_DEVICES + " LLMGW_SIM_GPU_CLASS=" + process.env.LLMGW_SIM_GPU_CLASS + " args=" + args.join(" "));
// Secrets of the agent an engine must not inherit.
console.log("inherited LLMGW_JOIN_TOKEN=" + process.env.LLMGW_JOIN_TOKEN + " LLMGW_TOKEN=" + process.env.LLMGW_TOKEN);
if (mode === "crash") {
  setTimeout(() => { console.error("RuntimeError: CUDA out of memory while loading layer 31"); process.exit(3); }, loadMs);
} else {
  if (mode === "ignore-term") process.on("SIGTERM", () => console.log("ignoring SIGTERM"));
  else process.on("SIGTERM", () => { console.log("SIGTERM received, exiting"); process.exit(0); });
  if (mode === "escaped-worker") {
    const worker = spawn(process.execPath, ["-e", "process.on('SIGTERM', () => {}); setInterval(() => {}, 1000)"], { stdio: "ignore", detached: true });
    worker.unref();
    console.log("escaped worker pid " + worker.pid);
  }
  if (mode === "ignore-term") {
    const worker = spawn(process.execPath, ["-e", "process.on('SIGTERM', () => {}); setInterval(() => {}, 1000)"], { stdio: "inherit" });
    console.log("worker pid " + worker.pid);
  }
  let ready = false;
  let running = 0;
  setTimeout(() => { ready = true; console.log("ready"); }, loadMs);
  const server = http.createServer((request, response) => {
    if (request.url === "/health") { response.writeHead(ready && mode !== "never-healthy" ? 200 : 503).end(); return; }
    if (request.url === "/metrics") { response.end("vllm:num_requests_running " + running + "\\nvllm:num_requests_waiting 0\\n"); return; }
    if (request.url === "/pid") { response.end(String(process.pid)); return; }
    if (request.url === "/slow") { running += 1; setTimeout(() => { running -= 1; response.end("done"); }, 1500); return; }
    response.writeHead(404).end();
  });
  server.on("error", (error) => { console.error("cannot listen on port " + port + ": " + error.code); process.exit(1); });
  server.listen(port, "127.0.0.1");
}
`;

export async function writeFakeEngine(directory: string): Promise<string> {
  const file = path.join(directory, "fake-engine.mjs");
  await writeFile(file, fakeEngineSource);
  return file;
}

function metric(text: string, name: string): number | undefined {
  const match = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.eE+-]+)$`, "m").exec(text);
  return match ? Number(match[1]) : undefined;
}

/** A stand-in for src/engines/drivers: runs `program ...prefix --port P --model M --weights W` for every engine. */
export function standInDriverFor(program: string, prefix: readonly string[]): (engine: EngineName) => EngineDriver {
  return (engine) => ({
    engine,
    program,
    metricsPath: "/metrics",
    build(input: EngineLaunchInput) {
      return {
        argv: [program, ...prefix, "--port", String(input.port), "--model", input.modelName, "--weights", input.weightsPath, ...input.extraArgs],
        env: { CUDA_VISIBLE_DEVICES: input.cards.join(","), ...input.extraEnv },
        healthPath: "/health",
        metricsPath: "/metrics",
      };
    },
    parseMetrics(text: string) {
      return {
        requestsRunning: metric(text, "vllm:num_requests_running"),
        requestsWaiting: metric(text, "vllm:num_requests_waiting"),
        kvCacheUsage: undefined,
        promptTokensTotal: undefined,
        generationTokensTotal: undefined,
      };
    },
  });
}

/** Polls until the check passes; bounded, so a broken test fails instead of hanging. Checks that start a process (ctl) poll less often. */
export async function waitFor<T>(check: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 15_000, what = "condition", intervalMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

export function killGroup(processGroup: number | undefined | null): void {
  if (processGroup === undefined || processGroup === null) return;
  try {
    process.kill(-processGroup, "SIGKILL");
  } catch {
    // already gone
  }
}
