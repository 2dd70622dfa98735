import type { FastifyInstance } from "fastify";
import { registerCanaryRoutes } from "../api/index.js";
import { ArmReporter, gatewayReportId, summariseSlots, type Gateway, type GatewayLog } from "../gateway/index.js";
import type { Reconciler } from "../reconcile/index.js";
import { CanaryService, type CanaryParts, type CatalogService, type FleetService } from "../services/index.js";
import { listArmSlots, putArmSlots, listCanaries, type Store } from "../store/index.js";

/** The traffic share of each model's canary while it runs (a promotion or abort asked for and not yet carried out included). */
export async function canaryWeights(store: Store): Promise<ReadonlyMap<string, number>> {
  const rows = await listCanaries(store.db);
  return new Map(rows.filter((row) => row.state === "running" || row.state === "promoting" || row.state === "aborting").map((row) => [row.model, row.weight]));
}

/**
 * Wires canaries into a server: the routes, and the gate, which the
 * reconciler asks at the start of each pass it leads. An arm's numbers are
 * this server's own gateway's counts (in memory, exact to the request) plus
 * what every other gateway reported to the store: `llmgw gateway` processes
 * over HTTP, and the gateways of other servers sharing Postgres, which this
 * server's own reporter below writes to as well.
 */
export function startCanaries(
  app: FastifyInstance,
  parts: { store: Store; catalog: CatalogService; fleet: FleetService; reconciler: Reconciler; gateway: Gateway; log: GatewayLog; preview?: CanaryParts["preview"] },
): { stop(): Promise<void> } {
  const { store, catalog, fleet, reconciler, gateway } = parts;
  const ownId = gatewayReportId();
  const canaries = new CanaryService({
    store,
    catalog,
    replicas: (model) => fleet.listReplicas({ model }),
    counts: async (model, arm, sinceMs, notBeforeMs) => {
      const reported = await listArmSlots(store.db, { model, arm, sinceMs, notBeforeMs, exceptGateway: ownId });
      return summariseSlots([...gateway.arms.slots(model, arm, sinceMs, notBeforeMs), ...reported]);
    },
    wake: () => reconciler.wake(),
    ...(parts.preview ? { preview: parts.preview } : {}),
  });
  reconciler.onPass((nowMs) => canaries.settle(nowMs));
  registerCanaryRoutes(app, canaries, (gatewayId, slots) => putArmSlots(store.db, gatewayId, slots, Date.now()));
  const reporter = new ArmReporter(
    gateway.arms,
    (slots) => putArmSlots(store.db, ownId, slots, Date.now()),
    (error) => parts.log.warn({ err: error }, "arm-counts-unwritten: retried with the next report"),
  );
  reporter.start();
  return { stop: () => reporter.stop() };
}
