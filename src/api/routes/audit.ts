import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { listAuditEvents } from "../../store/audit-rows.js";
import type { Store } from "../../store/open-store.js";
import { parseQuery } from "../parse-body.js";
import { redactAuditValue } from "../../catalog/redact.js";

const auditQuery = z.strictObject({
  model: z.string().optional(),
  limit: z.coerce.number().int().min(1).max(1000, { message: "at most 1000 events at a time" }).default(100),
});

export function registerAuditRoutes(app: FastifyInstance, store: Store): void {
  app.get("/api/v1/audit", { config: { access: "read" } }, async (request) => {
    const query = parseQuery(auditQuery, request.query);
    const events = await listAuditEvents(store.db, query);
    return { events: events.map((event) => ({ ...event, before: redactAuditValue(event.before, request.audience), after: redactAuditValue(event.after, request.audience) })) };
  });
}
