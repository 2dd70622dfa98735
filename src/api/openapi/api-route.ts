import type { FastifyInstance } from "fastify";
import type { z } from "zod";

/**
 * What the OpenAPI document says of one admin-API route, declared beside the
 * route in its `config.api`. The schemas are the very ones the handler
 * validates with (parseBody, parseQuery), so the document cannot describe a
 * body the route does not accept. Path parameters come from the path itself
 * unless `params` is given.
 */
export interface ApiRouteDoc {
  readonly summary: string;
  readonly params?: z.ZodType;
  readonly query?: z.ZodType;
  readonly body?: z.ZodType;
  /** The answer's schema where one exists as zod; most views are TypeScript types only, described in docs/admin-api.md. */
  readonly response?: z.ZodType;
  /** The success status when it is not 200 (201 for a creation, 202 for work started). */
  readonly status?: number;
  /** The answer's media type when it is not JSON (logs are text, followed events NDJSON). */
  readonly produces?: string;
}

declare module "fastify" {
  interface FastifyContextConfig {
    api?: ApiRouteDoc;
  }
  interface FastifyInstance {
    /** Every route this app registered, as collectRoutes saw it. */
    registeredRoutes: readonly RegisteredRoute[];
  }
}

export interface RegisteredRoute {
  readonly method: string;
  readonly url: string;
  readonly access: string;
  readonly api: ApiRouteDoc | undefined;
}

/**
 * Records every route as fastify registers it (its onRoute hook), so the
 * document describes exactly the routes this app serves. Install before any
 * route is registered.
 */
export function collectRoutes(app: FastifyInstance): readonly RegisteredRoute[] {
  const routes: RegisteredRoute[] = [];
  app.decorate("registeredRoutes", routes);
  app.addHook("onRoute", (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const config = (route.config ?? {}) as { access?: string; api?: ApiRouteDoc };
    for (const method of methods) {
      // fastify adds HEAD beside every GET; it is the GET's own route.
      if (method === "HEAD") continue;
      routes.push({ method, url: route.url, access: config.access ?? "admin", api: config.api });
    }
  });
  return routes;
}
