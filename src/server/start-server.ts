import type { FastifyInstance } from "fastify";
import { loadServerConfig, redactDatabaseUrl, type ServerConfig, type ServerOverrides } from "../catalog/server-config.js";
import { DomainError } from "../errors/domain-error.js";
import { listenFailure } from "../errors/listen-failure.js";
import { openStore, type Store } from "../store/open-store.js";
import { ensurePrivateDirectory, privateFileWarning } from "../files/private-files.js";
import { adminTokenFileName, adminTokenHint, bootstrapAdminToken } from "./admin-token.js";
import { buildApp } from "./build-app.js";
import { CatalogService } from "../services/catalog-service.js";
import { FleetService } from "../services/fleet-service.js";
import { loadServerKey, serverKeyFileName, serverKeyVariable } from "./server-key.js";
import { serverIdentity } from "./server-identity.js";
import { KeysPolicy, type GatewayPolicy, OpenPolicy, openPolicy } from "../gateway/policy/index.js";
import { storeKeysBackend } from "./store-keys-backend.js";
import path from "node:path";
import { verifyingDispatcher } from "../net/tls-files.js";
import { Gateway, type GatewayLog } from "../gateway/request/index.js";
import { RoutingTableSource } from "./routing-table-source.js";
import { canaryWeights, startCanaries } from "./start-canaries.js";
import pino from "pino";
import type { LogSettings } from "../log-output.js";
import { agentPaths } from "../protocol/agent-protocol.js";
import { Reconciler } from "../reconcile/reconciler.js";
import type { ReconcilerLog } from "../reconcile/reconciler-ports.js";
import { registerReconcileRoutes } from "../api/routes/reconcile.js";
import type { PreviewReplicas } from "../api/dry-run.js";
import { registerModelChangeRoutes } from "../api/routes/model-changes.js";
import { fitsNowhereCheck } from "../services/fits-nowhere-check.js";
import { ModelChangeService } from "../services/model-change-service.js";
import { modelStatusSource, placementsForRouting } from "./model-status-source.js";
import { readModelSource } from "../plan/read-model-source.js";
import { defaultSourceCheckTimeoutMs } from "../plan/check-sources.js";
import { throttleDemand } from "../gateway/routing/index.js";
import { serverReadOptions, type PlanSettings } from "../api/routes/plan.js";
import { checkDeclaredSources } from "./check-declared-sources.js";
import { registerPullRoutes } from "../api/routes/pull.js";
import { PullService } from "../services/pull-service.js";
import { registerVersionRoutes } from "../api/routes/versions.js";
import { VersionService } from "../services/version-service.js";
import type { CatalogModel } from "../catalog/catalog-model.js";
import { registerHeadroomRoutes } from "../api/routes/headroom.js";
import { registerCardMemoryRoutes } from "../api/routes/card-memory.js";
import { registerAdapterRoutes } from "../api/routes/adapters.js";
import { AdapterService } from "../services/adapter-service.js";

/** The reconciler logs with the server's logger settings (silent when the server's logger is off). */
function reconcileLog(logger: LogSettings | false): ReconcilerLog {
  if (logger === false) return { info: () => undefined, warn: () => undefined };
  const { stream, ...options } = logger;
  return pino(options, stream).child({ component: "reconciler" });
}

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
  /** The server's own /v1, serving from the same routing table standalone gateways follow. */
  readonly gateway: Gateway;
  /** What the operator must read at start: a data directory or secret file open to other users, an open gateway on a non-loopback address. */
  readonly warnings: readonly string[];
  readonly reconciler: Reconciler;
  /**
   * Warnings about declared models whose sources do not answer, read after
   * the server listens so a hub that is down never holds up the start.
   */
  readonly declaredSourcesChecked: Promise<readonly string[]>;
  close(): Promise<void>;
}

export interface StartOptions extends ServerOverrides {
  readonly configPath?: string | undefined;
  readonly logger?: LogSettings | false;
  /** The gateway's keys, limits and usage; default from server.yaml's gateway.auth. */
  readonly gatewayPolicy?: GatewayPolicy;
  /** Tells the reconciler a model with no ready replica is wanted (an on-demand start). */
  readonly reportDemand?: (model: string) => void;
}

/** Loads and checks everything before it listens, so a bad config never half-starts a server. */
export async function startServer(options: StartOptions): Promise<RunningServer> {
  const config = loadServerConfig(options.configPath, options);
  const directoryWarning = ensurePrivateDirectory(config.dataDir);
  // Checked before the store opens: files this start creates are 0600 and need no word.
  const fileWarnings = ["llmgw.db", adminTokenFileName, serverKeyFileName].map((name) => privateFileWarning(path.join(config.dataDir, name)));
  const warnings: string[] = [directoryWarning, ...fileWarnings].filter((warning) => warning !== undefined);
  const store = await openStore(config);
  let gatewayKeys: KeysPolicy | undefined;
  let openUsage: OpenPolicy | undefined;
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
    const { key: serverKey } = await loadServerKey(store, config.dataDir, process.env[serverKeyVariable]);
    const fleet = new FleetService(store, catalog, {
      serverKey,
      heartbeatDeadlineMs: config.heartbeatDeadlineMs,
      settlingWindowMs: config.settlingWindowMs,
      heartbeatIntervalMs: 2000,
      gpuMemoryUtilization: config.gpuMemoryUtilization,
      mirror: config.mirror,
      agentDispatcher: verifyingDispatcher(config.nodesCa),
    });
    let reportBackground = (_error: unknown, _during: string): void => undefined;
    // Each answered request's usage is on disk here before its last byte leaves, until the store has it.
    const usageOptions = { journalDirectory: path.join(config.dataDir, usageJournalDirectory), journalSync: config.usageSync, onBackgroundError: (error: unknown, during: string) => reportBackground(error, during) };
    const keysBackend = storeKeysBackend(store);
    gatewayKeys = config.gatewayAuth === "keys" ? await KeysPolicy.start(keysBackend, usageOptions) : undefined;
    const open = config.gatewayAuth === "open" && options.gatewayPolicy === undefined ? await OpenPolicy.start((increments) => keysBackend.writeUsage(increments), usageOptions) : undefined;
    openUsage = open;
    const { tokenEnv } = config.huggingface;
    const hubToken = () => (tokenEnv ? process.env[tokenEnv] : undefined);
    const sourceSettings: PlanSettings = {
      hubEndpoint: config.huggingface.endpoint,
      hubToken,
      gpuMemoryUtilization: config.gpuMemoryUtilization,
      mirror: config.mirror,
    };
    const hubReading = () => serverReadOptions(sourceSettings);
    const readFacts = (source: string) => readModelSource(source, hubReading());
    // The reconciler reads a few sources at a time (ModelFactsCache): a mirror that takes the connection and never answers must give up its turn after the source check's deadline, not after undici's five minutes with the other sources queued behind it.
    const readFactsInTurn = (source: string) => readModelSource(source, { requestTimeoutMs: defaultSourceCheckTimeoutMs, ...hubReading() });
    const reconciler = new Reconciler(store, catalog, fleet, config.reconcile, reconcileLog(options.logger ?? false), Date.now, readFactsInTurn);
    fleet.whenHeartbeatDecisive(() => reconciler.wake());
    // Messages from off the request path (a table rebuild, a tokenizer load) go to the app's log once it exists.
    let appLog: GatewayLog | undefined;
    const log: GatewayLog = { warn: (facts, message) => appLog?.warn(facts, message) };
    let canaryParts: { stop(): Promise<void> } | undefined;
    const routing = new RoutingTableSource(catalog, fleet, (error) => log.warn({ err: error }, "routing-table-rebuild-failed: the last table stays in force"), 500, async () => canaryWeights(store), async () => placementsForRouting(store), config.cacheRouting);
    const gateway = new Gateway({
      // gatewayKeys exists exactly when auth is keys.
      policy: options.gatewayPolicy ?? gatewayKeys ?? open ?? openPolicy,
      // A request for a model with no ready replica tells this server's reconciler, as a standalone gateway does over HTTP.
      reportDemand:
        options.reportDemand ??
        throttleDemand((model) => {
          void reconciler.demand(model).catch((error: unknown) => log.warn({ model, error: (error as Error).message }, "demand-unrecorded"));
        }),
      environment: process.env,
      log,
      requestsPerKey: { max: config.limits.requestsPerKey, setting: "limits.requests_per_key in server.yaml" },
      cacheRouting: config.cacheRouting,
    });
    const previewReplicas: PreviewReplicas = (change) => reconciler.preview(change, config.gpuMemoryUtilization);
    const app = await buildApp({
      gatewayKeys,
      flushOpenUsage: open && (() => open.flushUsage()),
      openGatewayNotice: config.gatewayAuth === "open" ? openGatewayNotice(options.gatewayAuth !== undefined, config.configPath) : null,
      store,
      catalog,
      fleetService: fleet,
      serverIdentity: serverIdentity(serverKey),
      modelStatus: modelStatusSource(store),
      previewReplicas,
      fitsNowhere: fitsNowhereCheck({ readFacts, inventoryNodes: fleet.inventoryNodes, gpuMemoryUtilization: config.gpuMemoryUtilization }),
      registerMore: (routes) => {
        registerReconcileRoutes(routes, { store, catalog, fleet, reconciler, previewReplicas });
        registerPullRoutes(routes, new PullService(catalog, fleet, { mirror: config.mirror, gpuMemoryUtilization: config.gpuMemoryUtilization, demandProfiles: (model) => reconciler.demandProfilesOf(model) }));
        const requestRestart = (model: CatalogModel, inPlace: boolean, actor: string) => reconciler.requestRestart(model, inPlace, actor);
        const surgePreview = { checkRestart: (model: CatalogModel, inPlace: boolean) => reconciler.checkRestart(model, inPlace), preview: previewReplicas };
        registerVersionRoutes(routes, new VersionService(store, catalog, requestRestart, hubReading, surgePreview));
        registerAdapterRoutes(routes, new AdapterService(store, catalog, fleet, requestRestart, hubReading, surgePreview));
        canaryParts = startCanaries(routes, { store, catalog, fleet, reconciler, gateway, log, preview: previewReplicas });
        registerCardMemoryRoutes(routes, { catalog, fleet, cardBytes: (model, profile) => reconciler.cardBytesOf(model, profile) });
        registerHeadroomRoutes(routes, { catalog, fleet, demandProfiles: (model) => reconciler.demandProfilesOf(model), gpuMemoryUtilization: config.gpuMemoryUtilization });
        registerModelChangeRoutes(routes, new ModelChangeService({ store, catalog, inventoryNodes: fleet.inventoryNodes, reconciler, readFacts, gpuMemoryUtilization: config.gpuMemoryUtilization }));
        // Every change (a catalog change, a stop, a node joining) wakes the reconciler; it reads everything anew, so wake-ups may be many.
        // A heartbeat wakes it only when it changed what a pass decides on: most beats of a settled fleet change nothing.
        routes.addHook("onResponse", async (request) => {
          if (request.method !== "GET" && !request.dryRun && request.routeOptions.url !== agentPaths.heartbeat) reconciler.wake();
        });
      },
      adminTokenHint,
      logger: options.logger ?? false,
      gateway,
      routing,
      plan: sourceSettings,
      tls: config.tls,
      limits: config.limits,
    });
    appLog = app.log;
    reportBackground = (error, during) => app.log.warn({ err: error }, `gateway: failed ${during}; retrying on the next round`);
    routing.subscribe((table) => gateway.swap(table));
    await routing.start();
    if (config.gatewayAuth === "open" && !isLoopback(config.listen.host)) {
      warnings.push(
        `WARNING: the gateway is OPEN (gateway.auth: open) on ${config.listen.host}, which is not loopback: anyone who reaches this port can use every model. Use auth: keys, or listen on 127.0.0.1.`,
      );
    }
    let address: string;
    try {
      address = await app.listen({ host: config.listen.host, port: config.listen.port });
    } catch (error) {
      await app.close();
      throw listenFailure(`${config.listen.host}:${config.listen.port}`, "--listen (or listen: in server.yaml)", error);
    }
    // fastify names the scheme from its own https option, which a server factory leaves unset.
    if (config.tls) address = address.replace(/^http:/, "https:");
    reconciler.start();
    const declaredSourcesChecked = checkDeclaredSources(config.declared, sourceSettings).catch((error: unknown) => [`WARNING: the sources of the declared models were not checked: ${(error as Error).message}`]);
    return {
      declaredSourcesChecked,
      config,
      store,
      app,
      url: address,
      createdAdminToken,
      gatewayKeys,
      gateway,
      warnings,
      reconciler,
      async close() {
        await reconciler.stop();
        await app.close();
        await canaryParts?.stop().catch(() => undefined);
        routing.stop();
        // After the last request finished: the usage it counted is written before the store closes.
        await (gatewayKeys ?? openUsage)?.close().catch((error: unknown) => app.log.error({ err: error }, "gateway: could not write the last usage counts (they stay in the usage journal for the next start)"));
        await store.close();
      },
    };
  } catch (error) {
    await (gatewayKeys ?? openUsage)?.close().catch(() => undefined);
    await store.close();
    throw error;
  }
}

/** The data directory's folder of usage not yet in the store. */
export const usageJournalDirectory = "usage-journal";

function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127\./.test(host);
}

export function describeStorage(config: ServerConfig): string {
  return config.database ? `Postgres at ${redactDatabaseUrl(config.database)}` : `SQLite in ${config.dataDir}`;
}

/**
 * What a key made on an open gateway is told: that nothing checks it here,
 * and how checking is turned on. Set by the caller (llmgw demo keeps its
 * gateway open on purpose), a file setting does not override it, so the
 * ways out are another server or a checking gateway in front.
 */
export function openGatewayNotice(setByCaller: boolean, configPath: string | undefined): string {
  const unchecked = "This server's gateway is open: it checks no key, so this key's models and limits are not enforced here (every caller is served).";
  const gatewayInFront = "or send clients through `llmgw gateway --server URL --token ADMIN_TOKEN` in front of it, which checks keys by default";
  if (setByCaller) {
    return `${unchecked} It was started open by the program that ran it (llmgw demo does). Keys are checked by \`llmgw server\`, whose gateway checks them unless its server.yaml says \`gateway: { auth: open }\`, ${gatewayInFront}.`;
  }
  // Absolute: the person reading it may be in another folder, or on another machine.
  const where = configPath !== undefined ? path.resolve(configPath) : "server.yaml";
  return `${unchecked} To check keys, set \`gateway: { auth: keys }\` in ${where} and restart the server, ${gatewayInFront}.`;
}
