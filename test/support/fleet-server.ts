import { randomUUID } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { hashToken } from "../../src/auth/tokens.js";
import { buildApp } from "../../src/server/build-app.js";
import { CatalogService } from "../../src/services/catalog-service.js";
import { FleetService } from "../../src/services/fleet-service.js";
import { openStore, type Store } from "../../src/store/open-store.js";
import { insertToken } from "../../src/store/token-rows.js";

export interface FleetServer {
  readonly store: Store;
  readonly app: FastifyInstance;
  /** http://127.0.0.1:PORT, for agents and real HTTP clients. */
  readonly url: string;
}

/** A server with the fleet routes on an embedded store in `dataDir`, listening on loopback, knowing `adminToken`. Close app, then store. */
export async function startFleetServer(dataDir: string, adminToken: string): Promise<FleetServer> {
  const store = await openStore({ database: undefined, dataDir });
  await insertToken(store.db, { id: randomUUID(), name: "admin", role: "admin", hash: hashToken(adminToken) }, new Date().toISOString());
  const catalog = new CatalogService(store, [], "server.yaml");
  const fleet = new FleetService(store, catalog, { heartbeatDeadlineMs: 15_000, settlingWindowMs: 20_000, heartbeatIntervalMs: 300, gpuMemoryUtilization: 0.9, serverEnvironment: process.env });
  const app = await buildApp({ store, catalog, fleetService: fleet, adminTokenHint: "see admin-token" });
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  return { store, app, url };
}
