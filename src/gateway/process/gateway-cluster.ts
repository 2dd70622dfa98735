import cluster, { type Worker } from "node:cluster";
import { AggregatorRegistry } from "prom-client";
import { limitsBatchSchema, metricsRequestSchema, type MetricsAnswer } from "../../protocol/index.js";
import { KeyLimitsKeeper } from "../policy/key-limits-keeper.js";
import { tunedNodeArguments } from "../../serving-node-flags.js";

export interface GatewayClusterOptions {
  readonly workers: number;
  /** Added to each worker's environment (the admin token, which the primary took out of its own). */
  readonly workerEnvironment: Readonly<Record<string, string>>;
  /** Lines for the operator (a worker restarted); the workers' own output goes to the same stderr. */
  readonly note: (line: string) => void;
}

export interface RunningGatewayCluster {
  /** http://HOST:PORT the workers share. */
  readonly url: string;
  /** Asks every worker to stop taking requests and finish those in flight (each sends its last usage), and waits for all of them. */
  close(): Promise<void>;
}

/** A worker's exit before it listened: its own message is already on stderr. */
export class WorkerStartFailed extends Error {
  constructor(readonly exitCode: number) {
    super(`a gateway worker exited (code ${exitCode}) before it listened`);
    this.name = "WorkerStartFailed";
  }
}

/** Restarts closer together than this (per worker slot) are a crash loop: the slot is left empty instead. */
const minimumLifetimeMs = 5000;

/**
 * The primary of `llmgw gateway --workers N`: N copies of the gateway (this
 * same command, run by node:cluster) share one listening port, and the
 * primary answers none of the requests itself. Node runs JavaScript on one
 * core per process; proxying is mostly system calls made from JavaScript, so
 * one process tops out near one core while the machine has more.
 *
 * What must hold across workers lives here: the keys' rate-limit windows
 * (KeyLimitsKeeper; the workers charge them over IPC in batches), and the
 * gathering of every worker's metrics for the one that is scraped. Each worker
 * follows the routing table and reads the keys from the server on its own,
 * and writes the usage it counted in its own batches: usage rows are
 * increments the server adds up, so N writers count the same totals.
 */
export async function startGatewayCluster(options: GatewayClusterOptions): Promise<RunningGatewayCluster> {
  const keeper = new KeyLimitsKeeper();
  const metrics = new AggregatorRegistry();
  let closing = false;
  const startedAt = new Map<Worker, number>();

  // The workers serve the requests: each starts with the serving flags, also on a node that could not
  // restart the primary with them (before 22.15, execve is missing; fork takes node arguments everywhere).
  const workerNodeArguments = tunedNodeArguments("gateway", process.execArgv, process.env.NODE_OPTIONS, process.env.LLMGW_NODE_TUNING);
  if (workerNodeArguments !== undefined) cluster.setupPrimary({ execArgv: workerNodeArguments });
  const fork = (): Worker => {
    const worker = cluster.fork(options.workerEnvironment);
    startedAt.set(worker, Date.now());
    // The worker may be gone by the time an answer is ready; what it asked for is gone with it.
    const answer = (message: object) => {
      if (worker.isConnected()) worker.send(message);
    };
    worker.on("message", (message: unknown) => {
      const batch = limitsBatchSchema.safeParse(message);
      if (batch.success) {
        answer(keeper.answer(batch.data));
        return;
      }
      const scrape = metricsRequestSchema.safeParse(message);
      if (!scrape.success) return;
      metrics.clusterMetrics().then(
        (text) => answer({ type: "llmgw-metrics", id: scrape.data.id, text, error: null } satisfies MetricsAnswer),
        (error: unknown) => answer({ type: "llmgw-metrics", id: scrape.data.id, text: null, error: (error as Error).message } satisfies MetricsAnswer),
      );
    });
    return worker;
  };

  const workers = Array.from({ length: options.workers }, fork);
  let address: { address: string; port: number };
  try {
    address = await new Promise((resolve, reject) => {
      let listening = 0;
      for (const worker of workers) {
        worker.once("listening", (where: { address: string; port: number }) => {
          listening += 1;
          if (listening === workers.length) resolve(where);
        });
        worker.once("exit", (code: number | null) => {
          if (listening < workers.length) reject(new WorkerStartFailed(code ?? 1));
        });
      }
    });
  } catch (error) {
    closing = true;
    await stopAll(workers);
    throw error;
  }

  cluster.on("exit", (worker, code, signal) => {
    if (closing) return;
    const lived = Date.now() - (startedAt.get(worker) ?? 0);
    startedAt.delete(worker);
    if (lived < minimumLifetimeMs) {
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- node's types say a signal always comes; it is null when the worker exited with a code
      options.note(`gateway: worker ${worker.process.pid} exited (${signal ?? code}) ${Math.round(lived / 1000)} s after it started; not restarting it (the others keep serving). Its message is above.`);
      return;
    }
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- node's types say a signal always comes; it is null when the worker exited with a code
    options.note(`gateway: worker ${worker.process.pid} exited (${signal ?? code}); starting another`);
    fork();
  });

  const host = address.address.includes(":") ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    async close() {
      closing = true;
      await stopAll(Object.values(cluster.workers ?? {}).filter((worker): worker is Worker => worker !== undefined));
    },
  };
}

/** SIGTERM to each worker (which drains, sends its usage and exits), then waits for every one. */
async function stopAll(workers: readonly Worker[]): Promise<void> {
  await Promise.all(
    workers.map(
      (worker) =>
        new Promise<void>((resolve) => {
          if (worker.isDead()) {
            resolve();
            return;
          }
          worker.once("exit", () => resolve());
          worker.process.kill("SIGTERM");
        }),
    ),
  );
}
