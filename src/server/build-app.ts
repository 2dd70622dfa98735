import Fastify, { type FastifyInstance } from "fastify";
import type { LoggerOptions } from "pino";
import { installAccessControl } from "../api/access.js";
import { answerClientError, answerFrameworkError, bodyLimitBytes, installErrorHandling } from "../http/error-handler.js";
import { noReplicas, type ModelStatusSource, type ReplicaCountSource } from "../api/model-view.js";
import { maxParamLength } from "../http/router-limits.js";
import { registerAuditRoutes } from "../api/routes/audit.js";
import { registerFleetRoutes } from "../api/routes/fleet.js";
import { registerMetaRoutes } from "../api/routes/meta.js";
import { registerModelRoutes } from "../api/routes/models.js";
import { registerTokenRoutes } from "../api/routes/tokens.js";
import { registerGatewayKeyRoutes } from "../api/routes/gateway-keys.js";
import { registerUsageRoutes } from "../api/routes/usage.js";
import { registerGatewayFeedRoutes } from "../api/routes/gateway-feed.js";
import type { KeysPolicy } from "../gateway/keys-policy.js";
import { GatewayKeyService } from "../services/gateway-key-service.js";
import { registerRoutingRoutes, type RoutingTableFeed } from "../api/routes/routing.js";
import type { Gateway, GatewayLog } from "../gateway/gateway.js";
import { gatewayServerFactory } from "../gateway/gateway-server-factory.js";
import { registerGatewayRoutes } from "../gateway/register-gateway-routes.js";
import { requestIdFrom } from "../gateway/request-id-from.js";
import { TokenService } from "../services/token-service.js";
import { registerPresetRoutes } from "../api/routes/presets.js";
import { noFleet, registerPlanRoutes, type FleetSource, type PlanSettings } from "../api/routes/plan.js";
import type { Store } from "../store/open-store.js";
import type { CatalogService } from "../services/catalog-service.js";
import type { FleetService } from "../services/fleet-service.js";

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
  readonly logger?: LoggerOptions | false;
  /**
   * The gateway's key policy when `gateway.auth` is `keys`: key changes made
   * through the API reach it at once, and usage queries flush its counts
   * first. Without it (open gateway, catalog-only tests) keys are still
   * managed and usage still read.
   */
  readonly gatewayKeys?: KeysPolicy | undefined;
  /** The OpenAI-compatible /v1 and /metrics; without it the server has no gateway (catalog-only tests). */
  readonly gateway?: Gateway;
  /** GET /api/v1/routing for standalone gateways. */
  readonly routing?: RoutingTableFeed;
}

const defaultPlanSettings: PlanSettings = { hubEndpoint: "https://huggingface.co", hubToken: () => undefined, gpuMemoryUtilization: 0.9 };

/** Builds the HTTP app with every route, without listening, so tests can `inject()` or listen on port 0. */
export async function buildApp(parts: AppParts): Promise<FastifyInstance> {
  // Warnings about one /v1 request go to the app's log, which exists once Fastify() has returned.
  let built: FastifyInstance | undefined;
  const gatewayLog: GatewayLog = { warn: (facts, message) => built?.log.warn(facts, message) };
  const app = Fastify({
    // /v1 is answered before fastify on the same server: the hot path skips its routing, hooks and replies.
    ...(parts.gateway ? { serverFactory: gatewayServerFactory(parts.gateway, gatewayLog) } : {}),
    logger: parts.logger ?? false,
    // Names may contain "/" (org/model); clients send it encoded, and it must stay one segment.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength },
    bodyLimit: bodyLimitBytes,
    // The router's and Node's parser's own refusals, in the one error shape with the version header.
    frameworkErrors: answerFrameworkError,
    clientErrorHandler: answerClientError,
    // A caller's x-request-id is kept (a client or load balancer tracing its own ids), so every log line and answer carries it.
    genReqId: (request) => requestIdFrom(request.headers["x-request-id"]),
  });
  built = app;
  installErrorHandling(app);
  installAccessControl(app, parts.store, parts.adminTokenHint);
  registerMetaRoutes(app);
  registerModelRoutes(app, parts.catalog, parts.replicaCounts ?? parts.fleetService?.replicaCounts ?? noReplicas, parts.modelStatus, parts.plan);
  parts.registerMore?.(app);
  if (parts.fleetService) registerFleetRoutes(app, parts.fleetService, parts.catalog);
  registerAuditRoutes(app, parts.store);
  registerTokenRoutes(app, new TokenService(parts.store));
  const gatewayKeys = parts.gatewayKeys;
  registerGatewayKeyRoutes(app, new GatewayKeyService(parts.store, parts.catalog, async () => gatewayKeys?.refresh()));
  registerUsageRoutes(app, { store: parts.store, flush: async () => gatewayKeys?.flushUsage() });
  registerGatewayFeedRoutes(app, parts.store);
  if (parts.routing) registerRoutingRoutes(app, parts.routing);
  if (parts.gateway) registerGatewayRoutes(app, parts.gateway);
  registerPlanRoutes(app, parts.plan ?? defaultPlanSettings, parts.fleet ?? parts.fleetService?.inventoryNodes ?? noFleet);
  registerPresetRoutes(app, parts.catalog, parts.fleetService, parts.plan ?? defaultPlanSettings);
  await app.ready();
  return app;
}
