import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { adapterSchema } from "../../catalog/index.js";
import { flagSchema, isSet } from "../../protocol/index.js";
import type { AdapterService } from "../../services/index.js";
import { requireActor } from "../access.js";
import { parseBody, parseQuery } from "../parse-body.js";

const nameParams = z.object({ name: z.string() });
const adapterParams = z.object({ name: z.string(), adapter: z.string() });
// The catalog's own adapter schema, so a name or source is checked the same way as in server.yaml.
const addBody = adapterSchema.extend({ in_place: z.boolean().optional() });
const removeQuery = z.strictObject({ in_place: flagSchema });

/** A model's LoRA adapters: list, add (checked, then loaded at runtime or by surge), remove. */
export function registerAdapterRoutes(app: FastifyInstance, adapters: AdapterService): void {
  app.get("/api/v1/models/:name/adapters", { config: { access: "read", api: { summary: "A model's LoRA adapters" } } }, async (request) => adapters.list(nameParams.parse(request.params).name));

  app.post("/api/v1/models/:name/adapters", { config: { access: "admin", dryRun: true, api: { summary: "Add a LoRA adapter: loaded at runtime, or by surge restart", body: addBody, status: 201 } } }, async (request, reply) => {
    const { name } = nameParams.parse(request.params);
    const { in_place: inPlace, ...adapter } = parseBody(addBody, request.body);
    const answer = await adapters.add(name, adapter, inPlace ?? false, requireActor(request), request.dryRun);
    // A dry run answers 200: nothing was created.
    return request.dryRun ? answer : reply.status(201).send(answer);
  });

  app.delete("/api/v1/models/:name/adapters/:adapter", { config: { access: "admin", dryRun: true, api: { summary: "Remove a LoRA adapter", query: removeQuery } } }, async (request) => {
    const { name, adapter } = adapterParams.parse(request.params);
    const query = parseQuery(removeQuery, request.query);
    return adapters.remove(name, adapter, isSet(query.in_place), requireActor(request), request.dryRun);
  });
}
