import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { listAuditEvents, type Store } from "../../store/index.js";
import { parseQuery } from "../parse-body.js";
import { redactAuditValue } from "../../catalog/index.js";
import { decodeIdCursor, encodeIdCursor, isPaged, pageQueryShape } from "../lists/list-query.js";
import { maskedJson, sendList, weakEtag } from "../lists/list-answer.js";

const auditQuery = z.strictObject({
  ...pageQueryShape,
  model: z.string().optional(),
  action: z.string().min(1).optional(),
  actor: z.string().min(1).optional(),
  limit: z.coerce.number().int().min(1).max(1000, { message: "at most 1000 events at a time" }).optional().describe("At most this many events (100 without it), newest first; the answer then carries next_cursor toward older ones."),
});

/** Audit events shown when no limit is given, as before paging. */
const defaultAuditLimit = 100;

export function registerAuditRoutes(app: FastifyInstance, store: Store): void {
  app.get("/api/v1/audit", { config: { access: "read", api: { summary: "Who changed what, newest first, with before and after; filtered and paged", query: auditQuery } } }, async (request, reply) => {
    const query = parseQuery(auditQuery, request.query);
    const limit = query.limit ?? defaultAuditLimit;
    // Newest first; one more than asked, to tell whether an older page follows.
    const read = await listAuditEvents(store.db, {
      model: query.model,
      action: query.action,
      actor: query.actor,
      text: query.q,
      limit: limit + 1,
      beforeId: decodeIdCursor(query.cursor),
    });
    const page = read.slice(0, limit);
    const last = page.at(-1);
    const nextCursor = read.length > limit && last !== undefined ? encodeIdCursor(last.id) : null;
    // Audit events are never changed once written, so their ids (and who reads: values are masked per audience) say what the page holds.
    const etag = weakEtag(JSON.stringify(query), request.audience, page.map((event) => event.id).join(","));
    return sendList(request, reply, etag, () => {
      const events = page.map((event) => ({ ...event, before: redactAuditValue(event.before, request.audience), after: redactAuditValue(event.after, request.audience) }));
      return maskedJson(isPaged(query) ? { events, next_cursor: nextCursor } : { events }, request.audience);
    });
  });
}
