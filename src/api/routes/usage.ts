import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { UsageAnswer } from "../../protocol/gateway-views.js";
import type { Store } from "../../store/open-store.js";
import { sumUsage } from "../../store/usage-rows.js";
import { usageMinute } from "../../protocol/gateway-keys-feed.js";
import { parseMoment } from "../../catalog/parse-moment.js";
import { parseQuery } from "../parse-body.js";

const usageQuery = z.strictObject({
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
  app.get("/api/v1/usage", { config: { access: "read" } }, async (request): Promise<UsageAnswer> => {
    const query = parseQuery(usageQuery, request.query);
    const nowMs = (source.now ?? Date.now)();
    const sinceMs = parseMoment(query.since, nowMs, "back", "since");
    await source.flush();
    const totals = await sumUsage(source.store.db, { sinceMinute: usageMinute(sinceMs), key: query.key, model: query.model });
    return {
      since: new Date(sinceMs).toISOString(),
      until: new Date(nowMs).toISOString(),
      usage: totals.map((total) => ({
        key: total.key,
        model: total.model,
        requests: total.requests,
        errors: total.errors,
        prompt_tokens: total.promptTokens,
        completion_tokens: total.completionTokens,
        first_minute: total.firstMinute,
        last_minute: total.lastMinute,
      })),
    };
  });
}
