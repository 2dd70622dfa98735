import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { type UsageAnswer, usageMinute } from "../../protocol/index.js";
import { type Store, sumUsage } from "../../store/index.js";
import { parseMoment } from "../../catalog/index.js";
import { parseQuery } from "../parse-body.js";
import { matchesText, pageQueryShape } from "../lists/list-query.js";
import { sendItems } from "../lists/list-answer.js";

const usageQuery = z.strictObject({
  ...pageQueryShape,
  key: z.string().min(1).optional(),
  model: z.string().min(1).optional(),
  since: z.string().default("24h"),
});

export interface UsageSource {
  readonly store: Store;
  /** Writes this server's counted usage first, so the answer includes the last few seconds. */
  readonly flush: () => Promise<void>;
  readonly now?: () => number;
}

/** Gateway usage per key and model, summed over a period (default the last 24 hours). Any admin-API token may read it. */
export function registerUsageRoutes(app: FastifyInstance, source: UsageSource): void {
  app.get("/api/v1/usage", { config: { access: "read", api: { summary: "Requests, errors and tokens per key and model, filtered and paged", query: usageQuery } } }, async (request, reply) => {
    const query = parseQuery(usageQuery, request.query);
    const nowMs = (source.now ?? Date.now)();
    const sinceMs = parseMoment(query.since, nowMs, "back", "since");
    await source.flush();
    const totals = await sumUsage(source.store.db, { sinceMinute: usageMinute(sinceMs), key: query.key, model: query.model });
    const usage: UsageAnswer["usage"] = totals.map((total) => ({
      key: total.key,
      model: total.model,
      requests: total.requests,
      errors: total.errors,
      prompt_tokens: total.promptTokens,
      completion_tokens: total.completionTokens,
      first_minute: total.firstMinute,
      last_minute: total.lastMinute,
    }));
    const around: Omit<UsageAnswer, "usage"> = { since: new Date(sinceMs).toISOString(), until: new Date(nowMs).toISOString() };
    return sendItems(request, reply, { field: "usage", items: usage.filter((row) => matchesText(query.q, [row.key, row.model])), key: (row) => `${row.key}\u0000${row.model}`, query, around });
  });
}
