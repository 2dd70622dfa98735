import { performance } from "node:perf_hooks";
import { Pool } from "undici";

export interface FixedRateLoad {
  /** http://127.0.0.1:PORT */
  readonly origin: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: string;
  readonly requestsPerSecond: number;
  readonly durationMs: number;
  /** A streamed answer must end with this, or it counts as an error (a cut stream is not a success). */
  readonly mustEndWith?: string;
}

export interface FixedRateRun {
  readonly sent: number;
  readonly errors: number;
  readonly dropped: number;
  readonly sendingMs: number;
  /** Milliseconds from due to the end of each successful answer. */
  readonly latencies: number[];
}

export interface FixedRateResult {
  readonly sent: number;
  readonly completed: number;
  readonly errors: number;
  /** Requests not sent because `maxInFlight` were still waiting: the side could not keep up. */
  readonly dropped: number;
  readonly achievedPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

const maxInFlight = 512;

export function percentile(sorted: readonly number[], share: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(share * sorted.length))] as number;
}

/**
 * An open-loop load at a fixed rate: request n is due at start + n/rate,
 * whether or not earlier ones have answered, and its latency is counted from
 * when it was due, not when it was sent. A closed loop (wrk's) slows down
 * with the server and hides the queueing a real client would see
 * ("coordinated omission"); wrk2 fixes that but is not packaged in Debian,
 * so this generator does the same on undici.
 */
export async function runFixedRate(load: FixedRateLoad): Promise<FixedRateRun> {
  const pool = new Pool(load.origin, { connections: 128, pipelining: 1, keepAliveTimeout: 30_000 });
  const total = Math.round((load.requestsPerSecond * load.durationMs) / 1000);
  const latencies: number[] = [];
  let sent = 0;
  let errors = 0;
  let dropped = 0;
  let inFlight = 0;
  const started = performance.now();
  const intervalMs = 1000 / load.requestsPerSecond;

  const fire = (dueAt: number) => {
    inFlight += 1;
    pool
      .request({ method: "POST", path: load.path, headers: load.headers, body: load.body })
      .then(async (answer) => {
        const text = await answer.body.text();
        if (answer.statusCode !== 200 || (load.mustEndWith !== undefined && !text.trimEnd().endsWith(load.mustEndWith))) errors += 1;
        else latencies.push(performance.now() - dueAt);
      })
      .catch(() => {
        errors += 1;
      })
      .finally(() => {
        inFlight -= 1;
      });
  };

  await new Promise<void>((resolve) => {
    const tick = () => {
      const due = Math.min(total, Math.floor((performance.now() - started) / intervalMs) + 1);
      while (sent < due) {
        const dueAt = started + sent * intervalMs;
        sent += 1;
        if (inFlight >= maxInFlight) dropped += 1;
        else fire(dueAt);
      }
      if (sent < total) setTimeout(tick, 1);
      else resolve();
    };
    tick();
  });
  const sendingMs = performance.now() - started;
  // Bounded: what has not answered 5 s after the last send counts as an error.
  const deadline = performance.now() + 5000;
  while (inFlight > 0 && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
  errors += inFlight;
  await pool.destroy();
  return { sent, errors, dropped, sendingMs, latencies };
}

/** Several runs of one side at one rate as one result (runs of the sides are interleaved, so a noisy moment is shared). */
export function summarise(runs: readonly FixedRateRun[]): FixedRateResult {
  const latencies = runs.flatMap((run) => run.latencies).sort((left, right) => left - right);
  const sendingMs = runs.reduce((sum, run) => sum + run.sendingMs, 0);
  return {
    sent: runs.reduce((sum, run) => sum + run.sent, 0),
    completed: latencies.length,
    errors: runs.reduce((sum, run) => sum + run.errors, 0),
    dropped: runs.reduce((sum, run) => sum + run.dropped, 0),
    achievedPerSecond: latencies.length / (sendingMs / 1000),
    p50Ms: percentile(latencies, 0.5),
    p99Ms: percentile(latencies, 0.99),
  };
}
