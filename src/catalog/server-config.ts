import { readFileSync } from "node:fs";
import { readCaFile, readTlsFiles, type TlsFiles } from "../net/tls-files.js";
import { dataDirLocation } from "./data-dir-location.js";
import path from "node:path";
import { DomainError } from "../errors/domain-error.js";
import { buildCatalog, type PlacedEntry } from "./build-catalog.js";
import { parseDuration } from "./duration.js";
import { checkSecretEnv } from "./secret-env.js";
import { parseWithSchema } from "./schema-errors.js";
import { serverConfigSchema, type ModelEntry, type UsageSync } from "./schema.js";
import { parseYamlSource } from "./yaml-source.js";
import { defaultReconcileSettings, type ReconcileSettings } from "./reconcile-settings.js";
import { defaultDataDir, defaultListen } from "./server-defaults.js";
import { resolveLimits, type ServerLimits } from "./server-limits.js";
import { defaultCacheRoutingWeights, type CacheRoutingWeights } from "./cache-routing.js";

/** The server's settings, validated once at start and frozen. */
export interface ServerConfig {
  /** The file these came from, for messages ("declared in server.yaml"); undefined without -c. */
  readonly configPath: string | undefined;
  readonly listen: { readonly host: string; readonly port: number };
  /** The certificate the server serves HTTPS with (`tls:`); undefined for plain HTTP. */
  readonly tls: TlsFiles | undefined;
  /** The private CA the server verifies agents' HTTPS control APIs with (`nodes.ca`), besides the system's CAs. */
  readonly nodesCa: Buffer | undefined;
  readonly dataDir: string;
  /** A postgres:// URL, or undefined for embedded SQLite in dataDir. Secret: never printed whole. */
  readonly database: string | undefined;
  readonly gpuMemoryUtilization: number;
  readonly huggingface: { readonly endpoint: string; readonly tokenEnv: string | undefined };
  /** The base `mirror:path` sources resolve against; undefined when none is configured. */
  readonly mirror: string | undefined;
  readonly heartbeatDeadlineMs: number;
  readonly settlingWindowMs: number;
  /** keys: /v1 needs a gateway key; open: anyone who reaches the port (meant for a loopback demo). */
  readonly gatewayAuth: "keys" | "open";
  /** What each answer waits for in the usage journal (`gateway.usage_sync`): write (written, not synced; the default) or disk (synced). */
  readonly usageSync: UsageSync;
  /** The weights of `routing: cache` (`gateway.cache_routing`), defaults filled in. */
  readonly cacheRouting: CacheRoutingWeights;
  /** The reconciler's pacing (`reconcile:`), defaults filled in. */
  readonly reconcile: ReconcileSettings;
  /** Limits against abuse on the server's port (`limits:`), defaults filled in. */
  readonly limits: ServerLimits;
  /** Declared models with the place each was written, for catalog errors that name the line. */
  readonly declared: readonly PlacedEntry[];
}

export interface ServerOverrides {
  readonly listen?: string | undefined;
  readonly dataDir?: string | undefined;
  readonly database?: string | undefined;
  /** The demo opens its loopback gateway without a server.yaml. */
  readonly gatewayAuth?: "keys" | "open" | undefined;
}

export { defaultDataDir, defaultListen };

/** HOST:PORT, [IPv6]:PORT, or a bare PORT (or :PORT) on loopback. */
export function parseListen(text: string, where: string): { host: string; port: number } {
  const match = /^(?:(\[[^\]]+\]|[^:]*):)?(\d{1,5})$/.exec(text.trim());
  const port = match ? Number(match[2]) : Number.NaN;
  if (!match || port > 65535) {
    throw new DomainError(
      "config_invalid",
      `${where}: "${text}" is not HOST:PORT`,
      "Give an address and port such as 127.0.0.1:8080 (or 0.0.0.0:8080 to listen on every interface; port 0 takes any free one).",
    );
  }
  return { host: match[1] ? match[1].replace(/^\[|\]$/g, "") : "127.0.0.1", port };
}

/** Reads server.yaml (when given), applies command-line overrides, validates everything, and freezes the result. */
export function loadServerConfig(
  configPath: string | undefined,
  overrides: ServerOverrides = {},
  environment: Readonly<Record<string, string | undefined>> = process.env,
): ServerConfig {
  let fileValue: unknown = {};
  let locate: ((path: readonly PropertyKey[], key?: string) => string | undefined) | undefined;
  const label = configPath ? path.basename(configPath) : "server settings";
  if (configPath) {
    let text: string;
    try {
      text = readFileSync(configPath, "utf8");
    } catch (error) {
      throw new DomainError(
        "config_invalid",
        `cannot read ${configPath}: ${(error as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (error as Error).message}`,
        "Check the path given to -c, or start without -c to use the defaults.",
      );
    }
    const source = parseYamlSource(text, label);
    fileValue = source.value ?? {};
    locate = source.locate;
  }
  const file = parseWithSchema(serverConfigSchema, fileValue, { label, ...(locate ? { locate } : {}) });

  const declared: PlacedEntry[] = (file.models ?? []).map((entry: ModelEntry, index) => ({
    entry,
    source: "file",
    place: `${label} models[${index}] (${entry.name})`,
    ...(locate ? { locate: (entryPath: readonly (string | number)[]) => locate(["models", index, ...entryPath]) } : {}),
  }));
  // Declared models alone must already form a valid catalog; runtime models are checked against them when the store opens.
  buildCatalog(declared);
  // A declared profile's secret_env must find its variables now: at start, the operator is at the terminal.
  for (const { entry } of declared) checkSecretEnv(entry, environment);

  const database = overrides.database ?? file.database;
  if (database !== undefined && !/^postgres(ql)?:\/\//.test(database)) {
    throw new DomainError(
      "config_invalid",
      `${overrides.database ? "--database" : `${label}: database`}: only postgres:// URLs are supported`,
      "Leave database unset for embedded SQLite in the data directory, or give postgres://USER:PASSWORD@HOST:5432/DB.",
    );
  }
  // Paths in server.yaml are the file's own: the server may be started from any directory.
  const besideFile = (file: string) => path.resolve(configPath ? path.dirname(configPath) : ".", file);
  const tls = file.tls
    ? readTlsFiles({ certFile: besideFile(file.tls.cert), keyFile: besideFile(file.tls.key), certWhere: `${label}: tls.cert`, keyWhere: `${label}: tls.key` })
    : undefined;
  const nodesCa = file.nodes?.ca ? readCaFile(besideFile(file.nodes.ca), `${label}: nodes.ca`) : undefined;
  const duration = (text: string | undefined, fallback: number) => (text === undefined ? fallback : (parseDuration(text) as number));

  return Object.freeze({
    configPath,
    listen: parseListen(overrides.listen ?? file.listen ?? defaultListen, overrides.listen ? "--listen" : `${label}: listen`),
    tls,
    nodesCa,
    dataDir: dataDirLocation({ flag: overrides.dataDir, fromFile: file.data_dir, configPath, label }),
    database,
    gpuMemoryUtilization: file.gpu_memory_utilization ?? 0.9,
    huggingface: Object.freeze({
      endpoint: file.huggingface?.endpoint ?? "https://huggingface.co",
      tokenEnv: file.huggingface?.token_env,
    }),
    mirror: file.mirror,
    heartbeatDeadlineMs: duration(file.nodes?.heartbeat_deadline, 15_000),
    settlingWindowMs: duration(file.nodes?.settling_window, 20_000),
    gatewayAuth: overrides.gatewayAuth ?? file.gateway?.auth ?? "keys",
    usageSync: file.gateway?.usage_sync ?? "write",
    cacheRouting: Object.freeze({
      prefix: file.gateway?.cache_routing?.prefix_weight ?? defaultCacheRoutingWeights.prefix,
      queue: file.gateway?.cache_routing?.queue_weight ?? defaultCacheRoutingWeights.queue,
      cache: file.gateway?.cache_routing?.cache_weight ?? defaultCacheRoutingWeights.cache,
      cacheFull: file.gateway?.cache_routing?.cache_full ?? defaultCacheRoutingWeights.cacheFull,
    }),
    reconcile: Object.freeze({
      ...defaultReconcileSettings,
      intervalMs: duration(file.reconcile?.interval, defaultReconcileSettings.intervalMs),
      leaseMs: duration(file.reconcile?.lease, defaultReconcileSettings.leaseMs),
      backoffInitialMs: duration(file.reconcile?.backoff_initial, defaultReconcileSettings.backoffInitialMs),
      backoffMaxMs: duration(file.reconcile?.backoff_max, defaultReconcileSettings.backoffMaxMs),
      scaleDownCooldownMs: duration(file.reconcile?.scale_down_cooldown, defaultReconcileSettings.scaleDownCooldownMs),
      withdrawDelayMs: duration(file.reconcile?.withdraw_delay, defaultReconcileSettings.withdrawDelayMs),
      eventsKept: file.reconcile?.events_kept ?? defaultReconcileSettings.eventsKept,
    }),
    limits: resolveLimits(file.limits, (key) => `${label}: limits.${key}`),
    declared: Object.freeze(declared),
  });
}

/** The database URL with its password hidden, for logs and messages. */
export function redactDatabaseUrl(url: string): string {
  return url.replace(/(\/\/[^:/@]+:)[^@]*@/, "$1***@");
}
