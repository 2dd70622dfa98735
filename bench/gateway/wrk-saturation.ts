import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";

export interface SaturationResult {
  /** Answers wrk counted over the run. */
  readonly requests: number;
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Non-2xx answers and socket errors wrk counted. */
  readonly errors: number;
}

const toMs = (value: string, unit: string) => Number(value) * (unit === "us" ? 0.001 : unit === "s" ? 1000 : 1);

/** Reads wrk's summary (with --latency); throws naming what is missing, so a changed wrk never gives zeros. */
export function parseWrkOutput(text: string): SaturationResult {
  const rate = /Requests\/sec:\s+([\d.]+)/.exec(text);
  const requests = /(\d+) requests in /.exec(text);
  const p50 = /^\s+50%\s+([\d.]+)(us|ms|s)\s*$/m.exec(text);
  const p99 = /^\s+99%\s+([\d.]+)(us|ms|s)\s*$/m.exec(text);
  if (!rate || !requests || !p50 || !p99) throw new Error(`wrk's output has no Requests/sec or latency distribution:\n${text}`);
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(text);
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(text);
  const errors = (socketErrors ? socketErrors.slice(1).reduce((sum, count) => sum + Number(count), 0) : 0) + (non2xx ? Number(non2xx[1]) : 0);
  return { requests: Number(requests[1]), requestsPerSecond: Number(rate[1]), p50Ms: toMs(p50[1] as string, p50[2] as string), p99Ms: toMs(p99[1] as string, p99[2] as string), errors };
}

/**
 * The most a side answers: wrk (closed loop, one thread, `connections`
 * connections each sending its next request as soon as the last answered)
 * for `durationS` seconds. The POST body and headers go in a Lua script.
 */
export async function runWrk(folder: string, url: string, body: string, headers: Record<string, string>, options: { connections: number; durationS: number }): Promise<SaturationResult> {
  const script = path.join(folder, `wrk-${Math.random().toString(36).slice(2)}.lua`);
  const lines = [`wrk.method = "POST"`, `wrk.body = ${JSON.stringify(body)}`, ...Object.entries(headers).map(([name, value]) => `wrk.headers[${JSON.stringify(name)}] = ${JSON.stringify(value)}`)];
  writeFileSync(script, `${lines.join("\n")}\n`);
  const output = await new Promise<string>((resolve, reject) => {
    execFile("wrk", ["-t1", `-c${options.connections}`, `-d${options.durationS}s`, "--latency", "-s", script, url], { timeout: (options.durationS + 15) * 1000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`wrk failed: ${error.message}\n${stderr}`));
      else resolve(stdout);
    });
  });
  return parseWrkOutput(output);
}
