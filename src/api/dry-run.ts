import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { DomainError } from "../errors/light.js";
import type { ChangeToPreview } from "../reconcile/index.js";
import { dryRunParameter, dryRunQuerySchema, type Change } from "../protocol/index.js";
import { parseQuery } from "./parse-body.js";

declare module "fastify" {
  interface FastifyContextConfig {
    /** The route honours `?dry_run=true`: it runs its checks and answers what it would do, writing nothing. */
    dryRun?: true;
  }
  interface FastifyRequest {
    /** `?dry_run=true` was asked for (and the route honours it). */
    dryRun: boolean;
  }
}

const dryRunOnly = z.object({ [dryRunParameter]: z.unknown().optional() });

export interface RouteSeen {
  readonly method: string;
  readonly url: string;
  readonly dryRun: boolean;
}

const routesSeen = new WeakMap<FastifyInstance, RouteSeen[]>();

/** Every route registered after `installDryRun`, and whether it honours a dry run: for the test that no change route lacks one. */
export function routesOf(app: FastifyInstance): readonly RouteSeen[] {
  return routesSeen.get(app) ?? [];
}

/**
 * Reads `?dry_run` on every change (any method but GET and HEAD) before the
 * route runs, and takes it out of the query so the routes' own strict query
 * schemas need not name it. A value other than true or 1 is refused, naming
 * the parameter. A route that does not honour a dry run refuses one rather
 * than make the change it was asked only to describe.
 */
export function installDryRun(app: FastifyInstance): void {
  const routes: RouteSeen[] = [];
  routesSeen.set(app, routes);
  app.addHook("onRoute", (route) => {
    for (const method of [route.method].flat()) routes.push({ method, url: route.url, dryRun: route.config?.dryRun === true });
  });
  app.decorateRequest("dryRun", false);
  app.addHook("preHandler", async (request) => {
    if (request.method === "GET" || request.method === "HEAD") return;
    const query = request.query;
    if (typeof query !== "object" || query === null || !(dryRunParameter in query)) return;
    const given = dryRunOnly.parse(query)[dryRunParameter];
    parseQuery(dryRunQuerySchema, { [dryRunParameter]: given });
    delete (query as Record<string, unknown>)[dryRunParameter];
    if (request.routeOptions.config.dryRun !== true) {
      throw new DomainError(
        "dry_run_unsupported",
        `${request.method} ${request.routeOptions.url ?? request.url} cannot do a dry run; nothing was changed`,
        "Leave out ?dry_run to make the change, or ask for a dry run on a change route of the admin API.",
      );
    }
    request.dryRun = true;
  });
}

/** The reconciler's dry run: what a change would make it start, stop and preempt. Catalog-only apps have none. */
export type PreviewReplicas = (change: ChangeToPreview) => Promise<Change[]>;

export const noReplicaPreview: PreviewReplicas = async () => [];

