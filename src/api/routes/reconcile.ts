import { Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { DomainError } from "../../errors/light.js";
import { type EventView, flagSchema, isSet } from "../../protocol/index.js";
import type { DemandService, NodeControlService, RestartService } from "../../services/index.js";
import { listEvents, readLease, type EventFilter, type Store } from "../../store/index.js";
import { requireActor } from "../access.js";
import { describeActor } from "../../catalog/index.js";
import { parseBody, parseQuery } from "../parse-body.js";
import { decodeIdCursor, encodeIdCursor, isPaged, pageQueryShape } from "../lists/list-query.js";
import { maskedJson, sendList, weakEtag } from "../lists/list-answer.js";

/** Events shown when no limit is given, as before paging. */
const defaultEventsLimit = 200;

const nameParams = z.object({ name: z.string() });
const eventsQuery = z.strictObject({
  ...pageQueryShape,
  model: z.string().optional(),
  node: z.string().min(1).optional(),
  kind: z.string().min(1).optional(),
  /** An event id (those after it) or an ISO time (those at or after it). */
  since: z.string().optional(),
  limit: z.coerce.number().int().min(1).max(10_000).optional().describe("At most this many events (200 without it), the newest; the answer then carries next_cursor toward older ones."),
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

export interface ReconcileRouteParts {
  readonly store: Store;
  /** This server's reconciler's name on the lease. */
  readonly holder: string;
  readonly demands: DemandService;
  readonly restarts: RestartService;
  readonly nodeControls: NodeControlService;
}

/** The reconciler's routes: events, on-demand starts, rolling restarts, and cordoning and draining nodes; each command goes to its service. */
export function registerReconcileRoutes(app: FastifyInstance, parts: ReconcileRouteParts): void {
  const { store, holder, demands, restarts, nodeControls } = parts;

  app.get("/api/v1/events", { config: { access: "read", api: { summary: "What the reconciler did and refused; NDJSON while following", query: eventsQuery } } }, async (request, reply) => {
    const query = parseQuery(eventsQuery, request.query);
    const limit = query.limit ?? defaultEventsLimit;
    const filter = { model: query.model, node: query.node, kind: query.kind, text: query.q, limit, ...sinceFilter(query.since) };
    if (!isSet(query.follow)) {
      // One more than asked, to tell whether an older page follows; pages go back in time from the newest.
      const read = await listEvents(store.db, { ...filter, limit: limit + 1, beforeId: decodeIdCursor(query.cursor) });
      const events: EventView[] = read.length > limit ? read.slice(1) : read;
      const nextCursor = read.length > limit && events[0] !== undefined ? encodeIdCursor(events[0].id) : null;
      // Events are never changed once written, so their ids say what the page holds.
      const etag = weakEtag(JSON.stringify(query), request.audience, events.map((event) => event.id).join(","));
      return sendList(request, reply, etag, () => maskedJson(isPaged(query) ? { events, next_cursor: nextCursor } : { events }, request.audience));
    }
    const first: EventView[] = await listEvents(store.db, filter);
    // Followed: one JSON event per line as they come, until the client goes.
    const abort = new AbortController();
    request.raw.on("close", () => abort.abort());
    async function* lines(): AsyncGenerator<string> {
      let lastId = first.at(-1)?.id ?? (await listEvents(store.db, { ...filter, limit: 1 })).at(-1)?.id ?? 0;
      for (const event of first) yield `${JSON.stringify(event)}\n`;
      while (!abort.signal.aborted) {
        try {
          await sleep(followPollMs, undefined, { signal: abort.signal });
        } catch {
          return;
        }
        for (const event of await listEvents(store.db, { ...filter, since: undefined, afterId: lastId, limit: 1000 })) {
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
  app.get("/api/v1/reconciler", { config: { access: "read", api: { summary: "Which server's reconciler acts" } } }, async () => {
    const lease = await readLease(store.db);
    const live = lease !== undefined && Date.parse(lease.expires_at) > Date.now();
    return { holder: live ? lease.holder : null, expires_at: live ? lease.expires_at : null, this_server: holder, this_server_holds: live && lease.holder === holder };
  });

  app.post("/api/v1/models/:name/demand", { config: { access: "admin", dryRun: true, api: { summary: "Demand for an on-demand model (the gateway calls it)" } } }, async (request) => {
    const { name } = nameParams.parse(request.params);
    return await demands.demand(name, request.dryRun);
  });

  app.post("/api/v1/models/:name/restart", { config: { access: "admin", dryRun: true, api: { summary: "Rolling restart of a model's replicas", body: restartBody } } }, async (request) => {
    const actor = requireActor(request);
    const { name } = nameParams.parse(request.params);
    const body = parseBody(restartBody, request.body ?? {});
    return await restarts.restart(name, body.in_place ?? false, describeActor(actor), request.dryRun);
  });

  for (const action of ["cordon", "uncordon", "drain"] as const) {
    app.post(`/api/v1/nodes/:name/${action}`, { config: { access: "admin", dryRun: true, api: { summary: `${action === "cordon" ? "Place nothing new on a node" : action === "uncordon" ? "Allow placing on a node again" : "Move a node's replicas away and cordon it"}` } } }, async (request) => {
      const actor = requireActor(request);
      const { name } = nameParams.parse(request.params);
      return await nodeControls.control(name, action, describeActor(actor), request.dryRun);
    });
  }
}
