import Fastify, { type FastifyInstance } from "fastify";
import type { LogSettings } from "../log-output.js";
import {
  installAccessControl,
  installDryRun,
  type PreviewReplicas,
  noReplicas,
  type ModelStatusSource,
  type ReplicaCountSource,
  registerAuditRoutes,
  registerFleetRoutes,
  registerMetaRoutes,
  collectRoutes,
  registerModelRoutes,
  registerTokenRoutes,
  registerGatewayKeyRoutes,
  registerStateRoutes,
  registerUsageRoutes,
  registerGatewayFeedRoutes,
  registerRoutingRoutes,
  type RoutingTableFeed,
  registerPresetRoutes,
  noFleet,
  registerPlanRoutes,
  type FleetSource,
  type PlanSettings,
  defaultConsoleDirectory,
  registerConsoleFiles,
  registerSessionRoutes,
  registerStreamRoutes,
  registerSeriesRoutes,
} from "../api/index.js";
import { answerFrameworkError, clientErrorAnswerer, installErrorHandling, maxParamLength } from "../http/index.js";
import { defaultServerLimits, type ServerLimits } from "../catalog/index.js";
import {
  type FitsNowhereCheck,
  CatalogTransferService,
  GatewayKeyService,
  TokenService,
  type CatalogService,
  type FleetService,
  ChangeFeed,
  defaultChangeFeedOptions,
  type ChangeFeedOptions,
} from "../services/index.js";
import { type KeysPolicy, type Gateway, type GatewayLog, gatewayServerFactory, registerGatewayRoutes, requestIdFrom } from "../gateway/index.js";
import type { Store } from "../store/index.js";
import type { TlsFiles } from "../net/index.js";
import { packageRoot } from "../package-root.js";

export interface AppParts {
  readonly store: Store;
  readonly catalog: CatalogService;
  readonly adminTokenHint: string;
  readonly replicaCounts?: ReplicaCountSource;
  /** The reconciler's word on each model (placement, last failure); without it the views say nothing of either. */
  readonly modelStatus?: ModelStatusSource;
  /** Routes of the reconciler (events, demand, restart, cordon and drain); registered when given. */
  readonly registerMore?: (app: FastifyInstance) => void;
  readonly fleet?: FleetSource;
  /** The hub and mirror the server reads sources through; without it (catalog-only tests) models are stored without a source check. */
  readonly plan?: PlanSettings;
  /** Nodes and replicas; without it the server has no fleet routes (catalog-only tests). */
  readonly fleetService?: FleetService;
  /** The identity agents key their credential to (server-identity.ts). */
  readonly serverIdentity?: string;
  readonly logger?: LogSettings | false;
  /** What the reconciler would do after a change, for `?dry_run=true`; without it a dry run reports the catalog write alone. */
  readonly previewReplicas?: PreviewReplicas;
  /** Refuses a model added at runtime that no node of this fleet could hold even empty; without it every model is stored. */
  readonly fitsNowhere?: FitsNowhereCheck;
  /**
   * The gateway's key policy when `gateway.auth` is `keys`: key changes made
   * through the API reach it at once, and usage queries flush its counts
   * first. Without it (open gateway, catalog-only tests) keys are still
   * managed and usage still read.
   */
  readonly gatewayKeys?: KeysPolicy | undefined;
  /** Writes the usage an open gateway counted, before a usage query reads the store. */
  readonly flushOpenUsage?: (() => Promise<void>) | undefined;
  /** Set when this server's gateway is open: told to whoever makes a key, which it will not check. */
  readonly openGatewayNotice?: string | null;
  /** The OpenAI-compatible /v1 and /metrics; without it the server has no gateway (catalog-only tests). */
  readonly gateway?: Gateway;
  /** HTTPS with this certificate (server.yaml's `tls`); only with a gateway, whose server factory makes the server. */
  readonly tls?: TlsFiles | undefined;
  /** server.yaml's `limits:` (default: defaultServerLimits); the body limit holds for the admin API, the rest on the gateway's port. */
  readonly limits?: ServerLimits;
  /** GET /api/v1/routing for standalone gateways. */
  readonly routing?: RoutingTableFeed;
  /** The built web console served at `/`; default `dist/console/` of the package. */
  readonly consoleDirectory?: string;
  /** The live-change stream's poll, ping and limits; defaults suit a server (tests shorten them). */
  readonly changeFeed?: Partial<Omit<ChangeFeedOptions, "onError">>;
}

const defaultPlanSettings: PlanSettings = { hubEndpoint: "https://huggingface.co", hubToken: () => undefined, gpuMemoryUtilization: 0.9 };

/** Builds the HTTP app with every route, without listening, so tests can `inject()` or listen on port 0. */
export async function buildApp(parts: AppParts): Promise<FastifyInstance> {
  // Warnings about one /v1 request go to the app's log, which exists once Fastify() has returned.
  let built: FastifyInstance | undefined;
  const gatewayLog: GatewayLog = { warn: (facts, message) => built?.log.warn(facts, message), info: (facts, message) => built?.log.info(facts, message) };
  const limits = parts.limits ?? defaultServerLimits;
  const app = Fastify({
    // /v1 is answered before fastify on the same server: the hot path skips its routing, hooks and replies.
    ...(parts.gateway ? { serverFactory: gatewayServerFactory(parts.gateway, gatewayLog, parts.tls, limits) } : {}),
    logger: parts.logger ?? false,
    // Names may contain "/" (org/model); clients send it encoded, and it must stay one segment.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength },
    bodyLimit: limits.adminBodyBytes,
    // The router's and Node's parser's own refusals, in the one error shape with the version header.
    frameworkErrors: answerFrameworkError,
    clientErrorHandler: clientErrorAnswerer(limits.headerBytes),
    // A caller's x-request-id is kept (a client or load balancer tracing its own ids), so every log line and answer carries it.
    genReqId: (request) => requestIdFrom(request.headers["x-request-id"]),
  });
  built = app;
  // Before any route: the OpenAPI document is made of the routes this app registered.
  const routes = collectRoutes(app);
  installErrorHandling(app);
  installAccessControl(app, parts.store, parts.adminTokenHint);
  installDryRun(app);
  registerMetaRoutes(app, routes);
  registerSessionRoutes(app);
  const changeFeed = new ChangeFeed(parts.store.db, {
    ...defaultChangeFeedOptions,
    ...parts.changeFeed,
    onError: (error) => app.log.warn({ err: error }, "change-feed-poll-failed: the stream retries at the next poll"),
  });
  registerStreamRoutes(app, changeFeed);
  // A change answered here is told to the streams at once; changes made elsewhere arrive with the next poll.
  // Not after an agent's call: 500 nodes beating every 2 s would keep the feed polling back to back,
  // and what a beat changes waits a poll (a second) at most.
  app.addHook("onResponse", async (request) => {
    if (request.method !== "GET" && request.method !== "HEAD" && request.routeOptions.config.access !== "agent") changeFeed.nudge();
  });
  // Open streams would hold app.close() forever; they end, and their clients reconnect.
  app.addHook("preClose", async () => changeFeed.close());
  // The models list is kept per revision only when its counts are the fleet's own, whose key says when they change.
  const fleetKey = parts.replicaCounts === undefined && parts.fleetService ? async () => (await (parts.fleetService as FleetService).viewKey()).key : undefined;
  registerModelRoutes(app, parts.catalog, parts.replicaCounts ?? parts.fleetService?.replicaCounts ?? noReplicas, parts.modelStatus, parts.plan, parts.previewReplicas, fleetKey, parts.fitsNowhere);
  parts.registerMore?.(app);
  if (parts.fleetService) registerFleetRoutes(app, parts.fleetService, parts.catalog, parts.serverIdentity);
  registerAuditRoutes(app, parts.store);
  registerTokenRoutes(app, new TokenService(parts.store));
  const gatewayKeys = parts.gatewayKeys;
  registerGatewayKeyRoutes(app, new GatewayKeyService(parts.store, parts.catalog, async () => gatewayKeys?.refresh(), Date.now, parts.openGatewayNotice ?? null));
  const flushUsage = async (): Promise<void> => (gatewayKeys ? gatewayKeys.flushUsage() : parts.flushOpenUsage?.());
  registerUsageRoutes(app, { store: parts.store, flush: flushUsage });
  registerStateRoutes(app, {
    store: parts.store,
    transfer: new CatalogTransferService(parts.store, parts.catalog, async () => gatewayKeys?.refresh()),
    flushUsage,
  });
  registerGatewayFeedRoutes(app, parts.store);
  if (parts.routing) registerRoutingRoutes(app, parts.routing);
  if (parts.gateway) registerGatewayRoutes(app, parts.gateway);
  if (parts.gateway) registerSeriesRoutes(app, parts.gateway.series, parts.catalog);
  registerPlanRoutes(app, parts.plan ?? defaultPlanSettings, parts.fleet ?? parts.fleetService?.inventoryNodes ?? noFleet);
  registerPresetRoutes(app, parts.catalog, parts.fleetService, parts.plan ?? defaultPlanSettings, parts.previewReplicas, parts.fitsNowhere);
  await registerConsoleFiles(app, parts.consoleDirectory ?? defaultConsoleDirectory(packageRoot.directory));
  await app.ready();
  return app;
}
