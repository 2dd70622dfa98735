import { Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { DomainError } from "../../errors/domain-error.js";
import type { EventView } from "../../protocol/views.js";
import type { Reconciler } from "../../reconcile/reconciler.js";
import type { CatalogService } from "../../services/catalog-service.js";
import type { FleetService } from "../../services/fleet-service.js";
import { listEvents, readLease, type EventFilter } from "../../store/reconcile-rows.js";
import type { Store } from "../../store/open-store.js";
import { requireActor } from "../access.js";
import { describeActor } from "../../catalog/actor.js";
import { flagSchema, isSet } from "../../protocol/logs-query.js";
import { parseBody, parseQuery } from "../parse-body.js";

const nameParams = z.object({ name: z.string() });
const eventsQuery = z.strictObject({
  model: z.string().optional(),
  /** An event id (those after it) or an ISO time (those at or after it). */
  since: z.string().optional(),
  limit: z.coerce.number().int().min(1).max(10_000).default(200),
  follow: flagSchema,
});
const restartBody = z.strictObject({ in_place: z.boolean().optional() });

/** How often a followed event stream looks for new events. */
const followPollMs = 500;

function sinceFilter(since: string | undefined): Pick<EventFilter, "afterId" | "since"> {
  if (since === undefined) return {};
  if (/^\d+$/.test(since)) return { afterId: Number(since) };
  if (Number.isNaN(Date.parse(since))) {
    throw new DomainError("invalid_input", `since=${since}: neither an event id nor a time`, "Give the id of the last event seen (since=123) or an ISO time (since=2026-01-01T12:00:00Z).");
  }
  return { since: new Date(since).toISOString() };
}

/** The reconciler's routes: events, on-demand starts, rolling restarts, and cordoning and draining nodes. */
export function registerReconcileRoutes(app: FastifyInstance, parts: { store: Store; catalog: CatalogService; fleet: FleetService; reconciler: Reconciler }): void {
  const { store, catalog, fleet, reconciler } = parts;

  app.get("/api/v1/events", { config: { access: "read" } }, async (request, reply) => {
    const query = parseQuery(eventsQuery, request.query);
    const filter = { model: query.model, limit: query.limit, ...sinceFilter(query.since) };
    const first: EventView[] = await listEvents(store.db, filter);
    if (!isSet(query.follow)) return { events: first };
    // Followed: one JSON event per line as they come, until the client goes.
    const abort = new AbortController();
    request.raw.on("close", () => abort.abort());
    async function* lines(): AsyncGenerator<string> {
      let lastId = first.at(-1)?.id ?? (await listEvents(store.db, { model: query.model, limit: 1 })).at(-1)?.id ?? 0;
      for (const event of first) yield `${JSON.stringify(event)}\n`;
      while (!abort.signal.aborted) {
        try {
          await sleep(followPollMs, undefined, { signal: abort.signal });
        } catch {
          return;
        }
        for (const event of await listEvents(store.db, { model: query.model, afterId: lastId, limit: 1000 })) {
          lastId = event.id;
          yield `${JSON.stringify(event)}\n`;
        }
      }
    }
    const stream = Readable.from(lines());
    stream.on("error", () => undefined);
    return reply.type("application/x-ndjson; charset=utf-8").send(stream);
  });

  // Which server's reconciler acts now: operators of several servers on one Postgres ask it after losing one.
  app.get("/api/v1/reconciler", { config: { access: "read" } }, async () => {
    const lease = await readLease(store.db);
    const live = lease !== undefined && Date.parse(lease.expires_at) > Date.now();
    return { holder: live ? lease.holder : null, expires_at: live ? lease.expires_at : null, this_server: reconciler.holder, this_server_holds: live && lease.holder === reconciler.holder };
  });

  app.post("/api/v1/models/:name/demand", { config: { access: "admin" } }, async (request) => {
    const { name } = nameParams.parse(request.params);
    const model = await catalog.get(name);
    if (model.entry.external) {
      throw new DomainError("invalid_profile", `${name} is an external model: it runs at its provider, and nothing is started for it`, "Report demand for models with profiles.");
    }
    return { model: name, demand_at: await reconciler.demand(name) };
  });

  app.post("/api/v1/models/:name/restart", { config: { access: "admin" } }, async (request) => {
    const actor = requireActor(request);
    const { name } = nameParams.parse(request.params);
    const body = parseBody(restartBody, request.body ?? {});
    const model = await catalog.get(name);
    if (model.entry.external) {
      throw new DomainError("invalid_profile", `${name} is an external model: it has no replicas to restart`, "Restart models with profiles.");
    }
    return { model: name, ...(await reconciler.requestRestart(model, body.in_place ?? false, describeActor(actor))) };
  });

  for (const [action, change] of [
    ["cordon", { cordoned: true, draining: false }],
    ["uncordon", { cordoned: false, draining: false }],
    ["drain", { cordoned: true, draining: true }],
  ] as const) {
    app.post(`/api/v1/nodes/:name/${action}`, { config: { access: "admin" } }, async (request) => {
      const actor = requireActor(request);
      const { name } = nameParams.parse(request.params);
      await fleet.getNode(name);
      await reconciler.controlNode(name, change, describeActor(actor));
      return await fleet.getNode(name);
    });
  }
}
