import { mkdirSync } from "node:fs";
import type { FastifyInstance } from "fastify";
import type { LoggerOptions } from "pino";
import { loadServerConfig, redactDatabaseUrl, type ServerConfig, type ServerOverrides } from "../catalog/server-config.js";
import { DomainError } from "../errors/domain-error.js";
import { listenFailure } from "../errors/listen-failure.js";
import { openStore, type Store } from "../store/open-store.js";
import { adminTokenHint, bootstrapAdminToken } from "./admin-token.js";
import { buildApp } from "./build-app.js";
import { CatalogService } from "./catalog-service.js";
import { FleetService } from "./fleet-service.js";
import path from "node:path";
import pino from "pino";
import { Reconciler, type ReconcilerLog } from "../reconcile/reconciler.js";
import { registerReconcileRoutes } from "../api/routes/reconcile.js";
import { modelStatusSource } from "./model-status-source.js";
import { readModelSource } from "../plan/read-model-source.js";

/** The reconciler logs with the server's logger settings (silent when the server's logger is off). */
function reconcileLog(logger: LoggerOptions | false): ReconcilerLog {
  if (logger === false) return { info: () => undefined, warn: () => undefined };
  return pino(logger).child({ component: "reconciler" });
}

export interface RunningServer {
  readonly config: ServerConfig;
  readonly store: Store;
  readonly app: FastifyInstance;
  /** http://host:port actually bound (the port is the real one when 0 was asked for). */
  readonly url: string;
  /** The admin token when this start created it; printed once by the CLI. */
  readonly createdAdminToken: { token: string; file: string } | undefined;
  readonly reconciler: Reconciler;
  close(): Promise<void>;
}

export interface StartOptions extends ServerOverrides {
  readonly configPath?: string | undefined;
  readonly logger?: LoggerOptions | false;
}

/** Loads and checks everything before it listens, so a bad config never half-starts a server. */
export async function startServer(options: StartOptions): Promise<RunningServer> {
  const config = loadServerConfig(options.configPath, options);
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const store = await openStore(config);
  try {
    const catalog = new CatalogService(store, config.declared, config.configPath ? path.basename(config.configPath) : "server.yaml");
    // Runtime models are checked against the declared ones before serving:
    // an edit to server.yaml that collides with a stored model is reported now.
    await catalog.verify().catch((error: unknown) => {
      if (!(error instanceof DomainError)) throw error;
      throw new DomainError(
        "config_invalid",
        `the models added at runtime no longer agree with ${config.configPath ?? "the declared models"}: ${error.message}`,
        "Rename or remove the conflicting entry in server.yaml; or, to keep the file's version, start once without it and remove the runtime model with `llmgw ctl model remove NAME`.",
        error.details,
      );
    });
    const createdAdminToken = await bootstrapAdminToken(store, config.dataDir);
    const fleet = new FleetService(store, catalog, {
      heartbeatDeadlineMs: config.heartbeatDeadlineMs,
      settlingWindowMs: config.settlingWindowMs,
      heartbeatIntervalMs: 2000,
      gpuMemoryUtilization: config.gpuMemoryUtilization,
    });
    const { tokenEnv } = config.huggingface;
    const hubToken = () => (tokenEnv ? process.env[tokenEnv] : undefined);
    const reconciler = new Reconciler(store, catalog, fleet, config.reconcile, reconcileLog(options.logger ?? false), Date.now, (source) => {
      const token = hubToken();
      return readModelSource(source, { hubEndpoint: config.huggingface.endpoint, ...(token ? { hubToken: token } : {}) });
    });
    const app = await buildApp({
      store,
      catalog,
      fleetService: fleet,
      modelStatus: modelStatusSource(store),
      registerMore: (routes) => {
        registerReconcileRoutes(routes, { store, catalog, fleet, reconciler });
        // Every change (a catalog change, a heartbeat, a stop) wakes the reconciler; it reads everything anew, so wake-ups may be many.
        routes.addHook("onResponse", async (request) => {
          if (request.method !== "GET") reconciler.wake();
        });
      },
      adminTokenHint: adminTokenHint(config.dataDir),
      logger: options.logger ?? false,
      plan: {
        hubEndpoint: config.huggingface.endpoint,
        hubToken: () => (tokenEnv ? process.env[tokenEnv] : undefined),
        gpuMemoryUtilization: config.gpuMemoryUtilization,
      },
    });
    let address: string;
    try {
      address = await app.listen({ host: config.listen.host, port: config.listen.port });
    } catch (error) {
      await app.close();
      throw listenFailure(`${config.listen.host}:${config.listen.port}`, "--listen (or listen: in server.yaml)", error);
    }
    reconciler.start();
    return {
      config,
      store,
      app,
      url: address,
      createdAdminToken,
      reconciler,
      async close() {
        await reconciler.stop();
        await app.close();
        await store.close();
      },
    };
  } catch (error) {
    await store.close();
    throw error;
  }
}

export function describeStorage(config: ServerConfig): string {
  return config.database ? `Postgres at ${redactDatabaseUrl(config.database)}` : `SQLite in ${config.dataDir}`;
}
