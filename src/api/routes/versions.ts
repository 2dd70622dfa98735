import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { modelEntrySchema, parseWeightsSource } from "../../catalog/index.js";
import { DomainError } from "../../errors/light.js";
import type { VersionService } from "../../services/index.js";
import { requireActor } from "../access.js";
import { parseBody } from "../parse-body.js";

const nameParams = z.object({ name: z.string() });
// The catalog's own check of an origin, then the source grammar, so a typo is refused here and not at the next update.
const originBody = z.strictObject({ origin: modelEntrySchema.shape.origin.unwrap() });
const revisionText = z.string().regex(/^[A-Za-z0-9._\/-]{1,255}$/, { message: "a branch, tag or commit of letters, digits and . _ / -" });
const updateBody = z.strictObject({ to: revisionText.optional(), in_place: z.boolean().optional() });
const rollbackBody = z.strictObject({ in_place: z.boolean().optional() });

function checkOrigin(origin: string): void {
  try {
    parseWeightsSource(origin);
  } catch (error) {
    if (error instanceof DomainError) throw new DomainError("invalid_input", `origin: ${error.message}`, error.hint);
    throw error;
  }
}

/** Routes of a model's versions: origin, updates, update, rollback, history. */
export function registerVersionRoutes(app: FastifyInstance, versions: VersionService): void {
  app.get("/api/v1/models/:name/origin", { config: { access: "read", api: { summary: "Where a model's weights come from" } } }, async (request) => versions.origin(nameParams.parse(request.params).name));

  app.post("/api/v1/models/:name/origin", { config: { access: "admin", dryRun: true, api: { summary: "Set where a model's weights come from", body: originBody } } }, async (request) => {
    const { name } = nameParams.parse(request.params);
    const { origin } = parseBody(originBody, request.body);
    checkOrigin(origin);
    return versions.setOrigin(name, origin, requireActor(request), request.dryRun);
  });

  app.get("/api/v1/updates", { config: { access: "read", api: { summary: "Models whose branch has a newer commit" } } }, async () => ({ models: await versions.updates() }));

  app.post("/api/v1/models/:name/update", { config: { access: "admin", dryRun: true, api: { summary: "Move to a revision by surge, after checking it", body: updateBody } } }, async (request) => {
    const { name } = nameParams.parse(request.params);
    const body = parseBody(updateBody, request.body);
    return versions.update(name, body.to, body.in_place ?? false, requireActor(request), request.dryRun);
  });

  app.post("/api/v1/models/:name/rollback", { config: { access: "admin", dryRun: true, api: { summary: "Back to the previous revision by surge", body: rollbackBody } } }, async (request) => {
    const { name } = nameParams.parse(request.params);
    const body = parseBody(rollbackBody, request.body);
    return versions.rollback(name, body.in_place ?? false, requireActor(request), request.dryRun);
  });

  app.get("/api/v1/models/:name/history", { config: { access: "read", api: { summary: "Every update, rollback and canary promotion" } } }, async (request) => versions.history(nameParams.parse(request.params).name));
}
