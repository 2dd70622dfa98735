import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { PullService } from "../../services/index.js";
import { parseBody, parseQuery } from "../parse-body.js";

const nameParams = z.object({ name: z.string() });
const pullBody = z.strictObject({ node: z.string().min(1).optional() });
const pullQuery = z.strictObject({ node: z.string().min(1).optional() });

/**
 * `POST /api/v1/models/{name}/pull` fetches a model's weights onto the
 * nodes of its pool (or one node) ahead of any replica; `GET` of the same
 * path reads how far each node has got, from the agents themselves.
 */
export function registerPullRoutes(app: FastifyInstance, pulls: PullService): void {
  app.post("/api/v1/models/:name/pull", { config: { access: "admin", dryRun: true, api: { summary: "Fetch a model's weights onto the nodes of its pool", body: pullBody, status: 202 } } }, async (request, reply) => {
    const { name } = nameParams.parse(request.params);
    const body = parseBody(pullBody, request.body ?? {});
    if (request.dryRun) return await pulls.preview(name, body.node);
    return reply.status(202).send(await pulls.start(name, body.node));
  });

  app.get("/api/v1/models/:name/pull", { config: { access: "read", api: { summary: "Where a pull stands, read from the agents now", query: pullQuery } } }, async (request) => {
    const { name } = nameParams.parse(request.params);
    const query = parseQuery(pullQuery, request.query);
    return await pulls.progress(name, query.node);
  });
}
