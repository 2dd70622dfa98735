import type { FastifyInstance } from "fastify";
import { serverApiRange, softwareVersion } from "../../protocol/index.js";
import type { RegisteredRoute } from "../openapi/api-route.js";
import { buildOpenApi } from "../openapi/build-openapi.js";

/** `routes` are the app's own, collected as they register, so the document served is the API served. */
export function registerMetaRoutes(app: FastifyInstance, routes: readonly RegisteredRoute[] = []): void {
  app.get("/healthz", { config: { access: "public" } }, async () => ({ status: "ok" }));
  app.get("/api/v1/version", { config: { access: "public", api: { summary: "The server's release and the admin API versions it speaks" } } }, async () => ({
    version: softwareVersion,
    api: serverApiRange,
  }));
  // Public: it describes routes and input shapes, no secret and nothing of this server's state.
  let document: Record<string, unknown> | undefined;
  app.get("/api/v1/openapi.json", { config: { access: "public", api: { summary: "This document: the admin API as OpenAPI 3.1" } } }, async () => {
    document ??= buildOpenApi(routes, { version: softwareVersion, apiRange: serverApiRange });
    return document;
  });
}
