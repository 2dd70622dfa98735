import Fastify, { type FastifyInstance } from "fastify";
import type { LoggerOptions } from "pino";
import { installAccessControl } from "../api/access.js";
import { installErrorHandling } from "../api/error-handler.js";
import { noReplicas, type ModelStatusSource, type ReplicaCountSource } from "../api/model-view.js";
import { registerAuditRoutes } from "../api/routes/audit.js";
import { registerFleetRoutes } from "../api/routes/fleet.js";
import { registerMetaRoutes } from "../api/routes/meta.js";
import { registerModelRoutes } from "../api/routes/models.js";
import { registerTokenRoutes } from "../api/routes/tokens.js";
import { TokenService } from "./token-service.js";
import { noFleet, registerPlanRoutes, type FleetSource, type PlanSettings } from "../api/routes/plan.js";
import type { Store } from "../store/open-store.js";
import type { CatalogService } from "./catalog-service.js";
import type { FleetService } from "./fleet-service.js";

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
  readonly plan?: PlanSettings;
  /** Nodes and replicas; without it the server has no fleet routes (catalog-only tests). */
  readonly fleetService?: FleetService;
  readonly logger?: LoggerOptions | false;
}

const defaultPlanSettings: PlanSettings = { hubEndpoint: "https://huggingface.co", hubToken: () => undefined, gpuMemoryUtilization: 0.9 };

/** Builds the HTTP app with every route, without listening, so tests can `inject()` or listen on port 0. */
export async function buildApp(parts: AppParts): Promise<FastifyInstance> {
  const app = Fastify({
    logger: parts.logger ?? false,
    // Names may contain "/" (org/model); clients send it encoded, and it must stay one segment.
    routerOptions: { ignoreTrailingSlash: true },
    bodyLimit: 4 * 1024 * 1024,
    genReqId: () => `req-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`,
  });
  installErrorHandling(app);
  installAccessControl(app, parts.store, parts.adminTokenHint);
  registerMetaRoutes(app);
  registerModelRoutes(app, parts.catalog, parts.replicaCounts ?? parts.fleetService?.replicaCounts ?? noReplicas, parts.modelStatus);
  parts.registerMore?.(app);
  if (parts.fleetService) registerFleetRoutes(app, parts.fleetService);
  registerAuditRoutes(app, parts.store);
  registerTokenRoutes(app, new TokenService(parts.store));
  registerPlanRoutes(app, parts.plan ?? defaultPlanSettings, parts.fleet ?? parts.fleetService?.inventoryNodes ?? noFleet);
  await app.ready();
  return app;
}
