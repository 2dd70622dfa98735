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
import { KeysPolicy } from "../gateway/keys-policy.js";
import path from "node:path";

export interface RunningServer {
  readonly config: ServerConfig;
  readonly store: Store;
  readonly app: FastifyInstance;
  /** http://host:port actually bound (the port is the real one when 0 was asked for). */
  readonly url: string;
  /** The admin token when this start created it; printed once by the CLI. */
  readonly createdAdminToken: { token: string; file: string } | undefined;
  /** The gateway's keys, limits and usage when `gateway.auth` is `keys`; undefined when the gateway is open. */
  readonly gatewayKeys: KeysPolicy | undefined;
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
  let gatewayKeys: KeysPolicy | undefined;
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
    let reportBackground = (_error: unknown, _during: string): void => undefined;
    gatewayKeys =
      config.gatewayAuth === "keys" ? await KeysPolicy.start(store, { onBackgroundError: (error, during) => reportBackground(error, during) }) : undefined;
    const { tokenEnv } = config.huggingface;
    const app = await buildApp({
      gatewayKeys,
      store,
      catalog,
      fleetService: fleet,
      adminTokenHint: adminTokenHint(config.dataDir),
      logger: options.logger ?? false,
      plan: {
        hubEndpoint: config.huggingface.endpoint,
        hubToken: () => (tokenEnv ? process.env[tokenEnv] : undefined),
        gpuMemoryUtilization: config.gpuMemoryUtilization,
      },
    });
    reportBackground = (error, during) => app.log.warn({ err: error }, `gateway: failed ${during}; retrying on the next round`);
    let address: string;
    try {
      address = await app.listen({ host: config.listen.host, port: config.listen.port });
    } catch (error) {
      await app.close();
      throw listenFailure(`${config.listen.host}:${config.listen.port}`, "--listen (or listen: in server.yaml)", error);
    }
    return {
      config,
      store,
      app,
      url: address,
      createdAdminToken,
      gatewayKeys,
      async close() {
        await app.close();
        // After the last request finished: the usage it counted is written before the store closes.
        await gatewayKeys?.close().catch((error: unknown) => app.log.error({ err: error }, "gateway: could not write the last usage counts"));
        await store.close();
      },
    };
  } catch (error) {
    await gatewayKeys?.close().catch(() => undefined);
    await store.close();
    throw error;
  }
}

export function describeStorage(config: ServerConfig): string {
  return config.database ? `Postgres at ${redactDatabaseUrl(config.database)}` : `SQLite in ${config.dataDir}`;
}
