import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { headroomViewSchema, type HeadroomView } from "../../protocol/index.js";
import { headroomView, type HeadroomParts } from "../../services/index.js";

const nameParams = z.object({ name: z.string() });

/** `GET /api/v1/models/{name}/headroom`: how many more replicas fit now and on which nodes; reads only. */
export function registerHeadroomRoutes(app: FastifyInstance, parts: HeadroomParts): void {
  app.get("/api/v1/models/:name/headroom", { config: { access: "read", api: { summary: "How many more replicas of the model fit now, and on which nodes", response: headroomViewSchema } } }, async (request): Promise<HeadroomView> => {
    const { name } = nameParams.parse(request.params);
    return headroomView(parts, name);
  });
}
