import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { seriesViewSchema, type SeriesView, seriesStepSeconds, seriesReportSchema, type SeriesStepReport, type SeriesPoint } from "../../protocol/index.js";
import type { CatalogService } from "../../services/index.js";
import { parseBody } from "../parse-body.js";

/** The per-model series the server keeps: its own gateway records into it, standalone gateways report into it. */
export interface SeriesSource {
  points(model?: string): SeriesPoint[];
  merge(reports: readonly SeriesStepReport[]): void;
  keepOnly(models: ReadonlySet<string>): void;
}

const nameParams = z.object({ name: z.string() });

/**
 * The console's charts over the last hour in 10-second steps, without a
 * Prometheus: per model, and for the whole gateway. What `llmgw gateway`
 * processes count arrives through POST /api/v1/gateway/series.
 */
export function registerSeriesRoutes(app: FastifyInstance, series: SeriesSource, catalog: CatalogService): void {
  app.get("/api/v1/series", { config: { access: "read", api: { summary: "The whole gateway's requests, errors, latency, time to first token and tokens over the last hour, in 10-second steps", response: seriesViewSchema } } }, async (): Promise<SeriesView> => ({ step_seconds: seriesStepSeconds, points: series.points() }));

  app.get("/api/v1/models/:name/series", { config: { access: "read", api: { summary: "The model's requests, errors, latency, time to first token and tokens over the last hour, in 10-second steps", response: seriesViewSchema } } }, async (request): Promise<SeriesView> => {
    const { name } = nameParams.parse(request.params);
    const model = await catalog.get(name);
    // A model removed since its last request leaves no steps behind once the catalog is read.
    series.keepOnly(new Set((await catalog.list()).map((entry) => entry.name)));
    return { model: model.name, step_seconds: seriesStepSeconds, points: series.points(model.name) };
  });

  app.post("/api/v1/gateway/series", { config: { access: "admin", api: { summary: "A gateway's per-model series steps, added to the server's (for llmgw gateway)", body: seriesReportSchema } } }, async (request) => {
    const report = parseBody(seriesReportSchema, request.body);
    series.merge(report.steps);
    return { added: report.steps.length };
  });
}
