import cluster from "node:cluster";
import { availableParallelism, homedir } from "node:os";
import path from "node:path";
import type { Command } from "commander";
import { DomainError } from "../errors/domain-error.js";
import type { KeysPolicy, OpenPolicy, PrimaryChannel } from "../gateway/policy/index.js";
import { print } from "./output.js";
import { addLogOptions, type LogOptions } from "./log-options.js";
import type { LimitsInput } from "../catalog/server-limits.js";
import { usageSyncs, type UsageSync } from "../catalog/names.js";

interface GatewayCommandOptions extends LogOptions {
  server?: string;
  listen: string;
  token?: string;
  auth: string;
  workers: string;
  tlsCert?: string;
  tlsKey?: string;
  ca?: string;
  usageJournal?: string;
  usageSync?: string;
  bodyBytes?: string;
  headerBytes?: string;
  headerTimeout?: string;
  requestTimeout?: string;
  idleTimeout?: string;
  connections?: string;
  requestsPerKey?: string;
}

/** The limits flags, named as server.yaml's `limits:` keys with - for _, so one page documents both. */
async function limitsFromFlags(options: GatewayCommandOptions) {
  // Loaded when run: its schemas would slow every ctl call's start.
  const { limitsFromText } = await import("../catalog/server-limits.js");
  const flag = (key: keyof LimitsInput) => `--${key.replaceAll("_", "-")}`;
  return limitsFromText(
    {
      body_bytes: options.bodyBytes,
      header_bytes: options.headerBytes,
      header_timeout: options.headerTimeout,
      request_timeout: options.requestTimeout,
      idle_timeout: options.idleTimeout,
      connections: options.connections,
      requests_per_key: options.requestsPerKey,
    },
    flag,
  );
}

/**
 * Where a gateway keeps the usage of answered requests until its server has
 * it: one folder per listening address and server, so a gateway started again
 * on the same port (or a sibling worker) finds what a crashed one left, and
 * never hands it to another server.
 */
export function defaultUsageJournal(listen: string, server: string, environment: Readonly<Record<string, string | undefined>> = process.env): string {
  const state = environment.XDG_STATE_HOME ?? path.join(homedir(), ".local", "state");
  const safe = (text: string) => text.replace(/^https?:\/\//, "").replace(/[^A-Za-z0-9.-]+/g, "_");
  return path.join(state, "llmgw", "gateway-usage", `${safe(listen)}-for-${safe(server)}`);
}

/** More workers than this is a typo, not a machine: each is a whole Node process. */
const maxWorkers = 256;

/** --workers N|auto: how many gateway processes share the port (auto: one per core this process may use). */
export function parseWorkers(text: string): number {
  if (text === "auto") return availableParallelism();
  const count = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isInteger(count) || count < 1 || count > maxWorkers) {
    throw new DomainError("config_invalid", `--workers ${text}: expected a whole number from 1 to ${maxWorkers}, or auto`, "Use --workers auto (one per core), or a number such as --workers 2.");
  }
  return count;
}

/** --usage-sync (or LLMGW_USAGE_SYNC): checked before any worker starts, so a wrong value is one error. */
export function parseUsageSync(text: string, where: string): UsageSync {
  const known = usageSyncs.find((name) => name === text);
  if (known !== undefined) return known;
  throw new DomainError(
    "config_invalid",
    `${where} ${text}: expected ${usageSyncs.join(" or ")}`,
    "Use write (the default: each answer's usage written before it ends; a crash of the process loses none, one of the machine may lose the last seconds') or disk (synced too: a crash of the machine loses none, at the cost of a sync per group of answers).",
  );
}

export function registerGatewayCommand(program: Command): void {
  const command = program
    .command("gateway")
    .description("an extra, stateless OpenAI-compatible gateway that follows a server's routing table (run several behind a load balancer)")
    .option("--server <url>", "the llmgw server whose routing table to follow (env LLMGW_SERVER)")
    .option("--listen <host:port>", "where the gateway listens", "127.0.0.1:8081")
    .option("--token <token>", "an admin token: the routing table carries the replicas' keys (env LLMGW_TOKEN)")
    .option("--auth <mode>", "keys (gateway API keys) or open (no key; loopback demos only)", "keys")
    .option("--tls-cert <file>", "serve HTTPS with this PEM certificate (with --tls-key); a renewed file is picked up without a restart")
    .option("--tls-key <file>", "the PEM private key of --tls-cert")
    .option("--ca <file>", "a PEM CA certificate to trust besides the system's, for a server whose certificate a private CA signed (env LLMGW_CA)")
    .option("--usage-journal <dir>", "where answered requests' usage is kept on disk until the server has it, so a crash loses none (env LLMGW_USAGE_JOURNAL; default ~/.local/state/llmgw/gateway-usage/LISTEN-for-SERVER)")
    .option("--usage-sync <when>", "what each answer waits for in the journal: write (its usage written, not synced: survives a crash of the process, not of the machine) or disk (synced too) (env LLMGW_USAGE_SYNC; default write)")
    .option("--workers <n>", "gateway processes sharing the port: a number, or auto (one per core); rate limits hold across them", "1")
    // Limits against abuse, as server.yaml's `limits:` (docs/server-yaml.md); each worker holds them on its own.
    .option("--body-bytes <n>", "the largest /v1 request body in bytes (default 33554432, 32 MiB)")
    .option("--header-bytes <n>", "the largest request head in bytes; longer is answered 431 (default 16384)")
    .option("--header-timeout <duration>", "a request's head must arrive within this, or 408 (default 10s)")
    .option("--request-timeout <duration>", "a whole request must arrive within this, or 408 (default 60s)")
    .option("--idle-timeout <duration>", "a kept-alive connection with no request is closed after this (default 72s)")
    .option("--connections <n>", "open connections per worker; new ones past it are closed at once (default 10000)")
    .option("--requests-per-key <n>", "requests one gateway key may have in flight per worker; one more is answered 429 (default 256)");
  addLogOptions(command, "warn")
    .action(async (options: GatewayCommandOptions) => {
      const server = options.server ?? process.env.LLMGW_SERVER;
      const token = options.token ?? process.env.LLMGW_TOKEN;
      if (!server) throw new DomainError("config_invalid", "--server is missing: the gateway follows a server's routing table", "Give --server http://HOST:PORT (or set LLMGW_SERVER).");
      if (!token) throw new DomainError("config_invalid", "--token is missing: reading the routing table needs an admin token", "Give --token (or set LLMGW_TOKEN): the server's first admin token (printed at its first start, in the file admin-token of its data directory), or one that `llmgw ctl token create NAME --role admin` made with it.");
      if (options.auth !== "keys" && options.auth !== "open") throw new DomainError("config_invalid", `--auth ${options.auth}: expected keys or open`, "Use --auth keys, or --auth open on loopback.");
      // Loaded when run, not at the top: every `llmgw ctl` builds this command tree, and must not load the gateway to do it.
      const [{ httpKeysBackend, KeysPolicy, OpenPolicy, IpcSharedLimits }, { startGateway }, { setGlobalDispatcher }, { caFromOption, certificateFailure, tlsFromFlags, verifyingDispatcher }, { logSettings }] = await Promise.all([
        import("../gateway/policy/index.js"),
        import("../gateway/process/index.js"),
        import("undici"),
        import("../net/tls-files.js"),
        import("../log-output.js"),
      ]);
      const workers = cluster.isWorker ? 1 : parseWorkers(options.workers);
      const usageSync = parseUsageSync(options.usageSync ?? process.env.LLMGW_USAGE_SYNC ?? "write", options.usageSync !== undefined ? "--usage-sync" : "LLMGW_USAGE_SYNC");
      // Checked before any worker starts, as the certificate is below.
      const limits = await limitsFromFlags(options);
      // Checked before any worker starts, so a wrong file is one error, not one per worker.
      const tls = tlsFromFlags(options.tlsCert, options.tlsKey);
      const serverDispatcher = verifyingDispatcher(caFromOption(options.ca));
      // Every call this process makes to its server (routing table, keys, usage, demand) goes through undici's
      // global dispatcher; engines are reached through their own pools, over plain HTTP on the cluster network.
      if (serverDispatcher) setGlobalDispatcher(serverDispatcher);
      // Kept out of the environment engines or anything else this process starts would inherit.
      delete process.env.LLMGW_TOKEN;
      if (workers > 1) {
        await runPrimary(workers, server, token, options);
        return;
      }
      // A worker of `--workers N`: its rate limits are kept by the primary, which also prints the listening line.
      const sharedLimits = cluster.isWorker ? new IpcSharedLimits(primaryChannel) : undefined;
      let running;
      let keys: KeysPolicy | OpenPolicy | undefined;
      try {
        // Keys and usage through the server's admin API: a standalone gateway has no database.
        const backend = httpKeysBackend(server, token);
        const usageOptions = {
          journalDirectory: options.usageJournal ?? process.env.LLMGW_USAGE_JOURNAL ?? defaultUsageJournal(options.listen, server),
          journalSync: usageSync,
          onBackgroundError: (error: unknown, during: string) => process.stderr.write(`gateway: failed ${during} (${(error as Error).message}); retrying on the next round\n`),
        };
        keys =
          options.auth === "keys"
            ? await KeysPolicy.start(backend, { ...usageOptions, ...(sharedLimits ? { sharedLimits } : {}) })
            : await OpenPolicy.start((increments) => backend.writeUsage(increments), usageOptions);
        running = await startGateway({
          server,
          token,
          listen: options.listen,
          tls,
          limits,
          policy: keys,
          logger: logSettings(options.logLevel, options.logFormat),
          ...(cluster.isWorker ? { primary: primaryChannel } : {}),
        });
      } catch (error) {
        await keys?.close().catch(() => undefined);
        // A worker's open channel to its primary would keep it running after its error is printed; the primary sees it exit.
        if (cluster.isWorker) setImmediate(() => process.disconnect());
        if (error instanceof DomainError) throw error;
        const certificate = certificateFailure(error);
        if (certificate) throw new DomainError("server_unreachable", `refused the server at ${server}: ${certificate.reason}`, certificate.hint);
        throw new DomainError(
          "server_unreachable",
          `cannot read the routing table from ${server}: ${(error as Error).message}`,
          "Check --server, and that --token is an admin token of that server.",
        );
      }
      if (!cluster.isWorker) {
        warnIfOpen(options);
        print(`llmgw gateway listening on ${running.url} (OpenAI-compatible at ${running.url}/v1, metrics at ${running.url}/metrics), following ${server}`);
      }
      // The usage counted since the last batch is sent after the last answer, before exiting.
      let stopping: Promise<void> | undefined;
      const stop = () => {
        stopping ??= running.close().then(async () => {
          await keys.close().catch((error: unknown) => process.stderr.write(`gateway: could not send the last usage counts: ${(error as Error).message}\n`));
          process.exit(0);
        });
      };
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
      if (cluster.isWorker) {
        // A primary that is gone no longer hands this worker connections nor checks its limits.
        process.once("disconnect", () => {
          sharedLimits?.abandon("the gateway's primary process is gone");
          stop();
        });
      }
    });
}

function warnIfOpen(options: GatewayCommandOptions): void {
  if (options.auth === "open" && !/^(127\.|localhost|::1|\[::1\])/.test(options.listen)) {
    process.stderr.write(`\nWARNING: this gateway is OPEN (--auth open) on ${options.listen}, which is not loopback: anyone who reaches it can use every model.\n\n`);
  }
}

const primaryChannel: PrimaryChannel = {
  send: (message) => void process.send?.(message),
  onMessage: (listener: (message: unknown) => void) => void process.on("message", listener),
  get connected() {
    return process.connected;
  },
};

/** `--workers N` with N > 1: this process forks the workers, keeps their rate limits, and drains them all on SIGTERM. */
async function runPrimary(workers: number, server: string, token: string, options: GatewayCommandOptions): Promise<void> {
  const { startGatewayCluster, WorkerStartFailed } = await import("../gateway/process/index.js");
  let running;
  try {
    running = await startGatewayCluster({ workers, workerEnvironment: { LLMGW_TOKEN: token }, note: (line) => process.stderr.write(`${line}\n`) });
  } catch (error) {
    if (!(error instanceof WorkerStartFailed)) throw error;
    // The worker printed why; the primary adds nothing but the exit code.
    process.exitCode = error.exitCode || 1;
    return;
  }
  warnIfOpen(options);
  // The workers serve the certificate themselves; the primary only names the scheme.
  const url = options.tlsCert !== undefined ? running.url.replace(/^http:/, "https:") : running.url;
  print(`llmgw gateway listening on ${url} with ${workers} workers (OpenAI-compatible at ${running.url}/v1, metrics at ${running.url}/metrics), following ${server}`);
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= running.close().then(() => process.exit(0));
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}
