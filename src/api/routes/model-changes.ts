import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { modelEntrySchema, profileSchema } from "../../catalog/index.js";
import type { ModelChangeService } from "../../services/index.js";
import { requireActor } from "../access.js";
import { parseBody } from "../parse-body.js";

const nameParams = z.object({ name: z.string() });

// Cut from the catalog's own schema, so a value is explained the same way in server.yaml and here.
const contextBody = z.strictObject({
  context: modelEntrySchema.shape.context.unwrap(),
  slots: profileSchema.shape.slots,
  in_place: z.boolean().optional(),
  // When the model's files cannot be read: change it without the trained-context and memory checks.
  unchecked_memory: z.boolean().optional(),
});
const gpusBody = z.strictObject({
  gpus: profileSchema.shape.gpus.unwrap(),
  nodes: profileSchema.shape.nodes,
  profile: z.string().optional(),
  in_place: z.boolean().optional(),
  unchecked_memory: z.boolean().optional(),
});

/** POST /api/v1/models/{name}/context and /gpus: changes that are checked against the model's files and the fleet, then roll its replicas. */
export function registerModelChangeRoutes(app: FastifyInstance, changes: ModelChangeService): void {
  app.post("/api/v1/models/:name/context", { config: { access: "admin", dryRun: true, api: { summary: "Change the context one request may use, and roll the replicas", body: contextBody } } }, async (request) => {
    const actor = requireActor(request);
    const { name } = nameParams.parse(request.params);
    const body = parseBody(contextBody, request.body);
    return await changes.context(name, { tokens: body.context, slots: body.slots, inPlace: body.in_place, uncheckedMemory: body.unchecked_memory }, actor, request.dryRun);
  });

  app.post("/api/v1/models/:name/gpus", { config: { access: "admin", dryRun: true, api: { summary: "Change the cards per replica, and roll the replicas", body: gpusBody } } }, async (request) => {
    const actor = requireActor(request);
    const { name } = nameParams.parse(request.params);
    const body = parseBody(gpusBody, request.body);
    return await changes.gpus(name, { gpus: body.gpus, nodes: body.nodes, profile: body.profile, inPlace: body.in_place, uncheckedMemory: body.unchecked_memory }, actor, request.dryRun);
  });
}
