import type { FastifyInstance } from "fastify";
import { serverApiRange, softwareVersion } from "../../protocol/api-version.js";

export function registerMetaRoutes(app: FastifyInstance): void {
  app.get("/healthz", { config: { access: "public" } }, async () => ({ status: "ok" }));
  app.get("/api/v1/version", { config: { access: "public" } }, async () => ({ version: softwareVersion, api: serverApiRange }));
}
