import type { FastifyInstance } from "fastify";
import { registerCanaryRoutes } from "../api/routes/canaries.js";
import { summariseSlots } from "../gateway/arm-stats.js";
import type { Gateway } from "../gateway/gateway.js";
import type { Reconciler } from "../reconcile/reconciler.js";
import { CanaryService } from "../services/canary-service.js";
import type { CatalogService } from "../services/catalog-service.js";
import type { FleetService } from "../services/fleet-service.js";
import { listCanaries } from "../store/canary-rows.js";
import type { Store } from "../store/open-store.js";

/** The traffic share of each model's canary while it runs (a promotion or abort asked for and not yet carried out included). */
export async function canaryWeights(store: Store): Promise<ReadonlyMap<string, number>> {
  const rows = await listCanaries(store.db);
  return new Map(rows.filter((row) => row.state === "running" || row.state === "promoting" || row.state === "aborting").map((row) => [row.model, row.weight]));
}

/**
 * Wires canaries into a server: the routes, and the gate, which the
 * reconciler asks at the start of each pass it leads, reading this server's
 * own gateway's counts per arm.
 */
export function startCanaries(app: FastifyInstance, parts: { store: Store; catalog: CatalogService; fleet: FleetService; reconciler: Reconciler; gateway: Gateway }): CanaryService {
  const { store, catalog, fleet, reconciler, gateway } = parts;
  const canaries = new CanaryService({
    store,
    catalog,
    replicas: (model) => fleet.listReplicas({ model }),
    counts: (model, arm, sinceMs) => summariseSlots(gateway.arms.slots(model, arm, sinceMs)),
    wake: () => reconciler.wake(),
  });
  reconciler.onPass((nowMs) => canaries.settle(nowMs));
  registerCanaryRoutes(app, canaries);
  return canaries;
}
