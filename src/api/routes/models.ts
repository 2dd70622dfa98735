import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { modelClasses, modelEntrySchema, profileSchema, scalingSchema } from "../../catalog/schema.js";
import type { CatalogService } from "../../services/catalog-service.js";
import { requireActor } from "../access.js";
import { modelView, noModelStatus, type ModelStatusSource, type ReplicaCountSource } from "../model-view.js";
import type { Audience } from "../../catalog/redact.js";
import { checkSecretEnv } from "../../catalog/secret-env.js";
import { parseBody, parseQuery } from "../parse-body.js";
import { checkSourcesAtDoor, sourceCheckQuery } from "../check-sources-at-door.js";
import type { PlanSettings } from "./plan.js";
import type { AddedModelView } from "../../protocol/views.js";

const nameParams = z.object({ name: z.string() });

// Bodies are cut from the catalog's own schema, so a field is checked (and
// explained) the same way in server.yaml, a model file and a request.
const scaleBody = scalingSchema.refine((body) => body.min !== undefined || body.max !== undefined || body.idle_timeout !== undefined, {
  message: "give at least one of min, max, idle_timeout",
});
// .unwrap() takes a field's own check without its optional wrapper: zod's
// .required() would replace our message with a generic "nonoptional" one.
const resourcesBody = z.strictObject({
  profile: z.string().optional(),
  memory_gb: profileSchema.shape.memory_gb.unwrap(),
  cpu_cores: profileSchema.shape.cpu_cores,
});
const classBody = z.strictObject({
  class: z.enum([...modelClasses, "default"], { message: `one of ${modelClasses.join(", ")}, or default` }),
});
const ownerBody = z.strictObject({ owner: modelEntrySchema.shape.owner.unwrap() });
const targetBody = z.strictObject({ in_flight: modelEntrySchema.shape.target.unwrap().shape.in_flight.nullable() });
const fallbacksBody = z.strictObject({ fallbacks: modelEntrySchema.shape.fallbacks.unwrap() });

/**
 * `sources` is how the server reads weights (hub, token, mirror); without it
 * (an app built for catalog-only tests) models are stored unread.
 */
export function registerModelRoutes(
  app: FastifyInstance,
  catalog: CatalogService,
  replicaCounts: ReplicaCountSource,
  modelStatus: ModelStatusSource = noModelStatus,
  sources?: PlanSettings,
): void {
  const view = async (name: string, audience: Audience) => {
    const [counts, statuses] = await Promise.all([replicaCounts(), modelStatus()]);
    return modelView(await catalog.get(name), catalog.declaredIn, counts.get(name), { audience, status: statuses.get(name) });
  };

  app.get("/api/v1/models", { config: { access: "read" } }, async (request) => {
    const [models, counts, statuses] = await Promise.all([catalog.list(), replicaCounts(), modelStatus()]);
    return { models: models.map((model) => modelView(model, catalog.declaredIn, counts.get(model.name), { audience: request.audience, status: statuses.get(model.name) })) };
  });

  app.get("/api/v1/models/:name", { config: { access: "read" } }, async (request) => view(nameParams.parse(request.params).name, request.audience));

  app.post("/api/v1/models", { config: { access: "admin" } }, async (request, reply) => {
    const { source_check: sourceCheck } = parseQuery(sourceCheckQuery, request.query);
    const entry = parseBody(modelEntrySchema, request.body);
    // The server's own environment: a secret_env naming a variable it lacks is refused now, not at the first replica.
    checkSecretEnv(entry, process.env);
    // The catalog's own rules first (a taken name, a missing fallback): they answer at once, the sources may take seconds.
    await catalog.checkAdd(entry);
    const checked = sources && sourceCheck !== "false" ? await checkSourcesAtDoor(entry, sources) : null;
    const model = await catalog.add(entry, requireActor(request));
    const answer: AddedModelView = { ...modelView(model, catalog.declaredIn, undefined, { audience: request.audience }), sources_checked: checked };
    return reply.status(201).send(answer);
  });

  app.delete("/api/v1/models/:name", { config: { access: "admin" } }, async (request) => {
    const { name } = nameParams.parse(request.params);
    await catalog.remove(name, requireActor(request));
    return { removed: name };
  });

  app.post("/api/v1/models/:name/scale", { config: { access: "admin" } }, async (request) => {
    const { name } = nameParams.parse(request.params);
    await catalog.scale(name, parseBody(scaleBody, request.body), requireActor(request));
    return view(name, request.audience);
  });

  app.post("/api/v1/models/:name/resources", { config: { access: "admin" } }, async (request) => {
    const { name } = nameParams.parse(request.params);
    await catalog.resources(name, parseBody(resourcesBody, request.body), requireActor(request));
    return view(name, request.audience);
  });

  app.post("/api/v1/models/:name/class", { config: { access: "admin" } }, async (request) => {
    const { name } = nameParams.parse(request.params);
    await catalog.setClass(name, parseBody(classBody, request.body).class, requireActor(request));
    return view(name, request.audience);
  });

  app.post("/api/v1/models/:name/owner", { config: { access: "admin" } }, async (request) => {
    const { name } = nameParams.parse(request.params);
    await catalog.setOwner(name, parseBody(ownerBody, request.body).owner, requireActor(request));
    return view(name, request.audience);
  });

  app.post("/api/v1/models/:name/target", { config: { access: "admin" } }, async (request) => {
    const { name } = nameParams.parse(request.params);
    await catalog.setTarget(name, parseBody(targetBody, request.body).in_flight, requireActor(request));
    return view(name, request.audience);
  });

  app.post("/api/v1/models/:name/fallbacks", { config: { access: "admin" } }, async (request) => {
    const { name } = nameParams.parse(request.params);
    await catalog.setFallbacks(name, parseBody(fallbacksBody, request.body).fallbacks, requireActor(request));
    return view(name, request.audience);
  });
}
