import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { modelNameSchema, shippedPresets } from "../../catalog/index.js";
import { readFileSize, defaultSourceCheckTimeoutMs, readMirrorManifest, readModelSource } from "../../plan/index.js";
import { PresetService, type PresetFleet, type CatalogPreview, type CatalogService, catalogWriteChange } from "../../services/index.js";
import { serverReadOptions, type PlanSettings } from "./plan.js";
import { requireActor } from "../access.js";
import { modelView } from "../model-view.js";
import { parseBody, parseQuery } from "../parse-body.js";
import { checkSourcesAtDoor, sourceCheckQuery } from "../check-sources-at-door.js";
import { type AddedModelView, dryRunAnswer } from "../../protocol/index.js";
import { resolveModel } from "../../catalog/index.js";
import type { FitsNowhereCheck } from "../../services/index.js";
import { fitsNowhereRefusal } from "./models.js";

import { noReplicaPreview, type PreviewReplicas } from "../dry-run.js";

const nameParams = z.object({ name: z.string() });
// The body is optional: an empty POST adds the preset under its own name.
const addBody = z.strictObject({ name: modelNameSchema.optional() });

/**
 * GET /api/v1/presets: the shipped presets, what each needs and where it
 * would run now. Admin-only although it changes nothing, as the plan is:
 * listing makes the server read the presets' sources from the hub.
 * POST /api/v1/presets/{name}: adds one to the catalog.
 */
export function registerPresetRoutes(
  app: FastifyInstance,
  catalog: CatalogService,
  fleet: PresetFleet | undefined,
  plan: PlanSettings,
  previewReplicas: PreviewReplicas = noReplicaPreview,
  fitsNowhere?: FitsNowhereCheck,
): void {
  const presets = new PresetService(shippedPresets, catalog, fleet, {
    // The plan's own reader and settings: a preset needs what `ctl model plan` says of its source.
    readFacts: (source) => readModelSource(source, serverReadOptions(plan)),
    // The source check's own reader: the size `ctl model add` will print is the one listed.
    readFileSize: (source) => readFileSize(source, serverReadOptions(plan)),
    gpuMemoryUtilization: plan.gpuMemoryUtilization,
    ...(plan.mirror !== undefined ? { mirrorManifest: () => readMirrorManifest(plan.mirror as string, defaultSourceCheckTimeoutMs) } : {}),
  });
  const readOnlyRefusal = {
    because: "listing presets needs an admin token, since the server reads each preset's source from the hub to say what it needs",
    hint: "Use an admin token (--token or LLMGW_TOKEN).",
  };
  app.get("/api/v1/presets", { config: { access: "admin", readOnlyRefusal, api: { summary: "The shipped presets, priced against the live fleet" } } }, async () => ({ presets: await presets.list() }));

  app.get("/api/v1/presets/:name", { config: { access: "admin", readOnlyRefusal, api: { summary: "One preset" } } }, async (request) => presets.view(nameParams.parse(request.params).name));

  app.post("/api/v1/presets/:name", { config: { access: "admin", dryRun: true, api: { summary: "Add a model from a preset", query: sourceCheckQuery, body: addBody, status: 201 } } }, async (request, reply) => {
    const { name } = nameParams.parse(request.params);
    const { source_check: sourceCheck, keep_unplaceable: keepUnplaceable } = parseQuery(sourceCheckQuery, request.query);
    const body = parseBody(addBody, request.body);
    let preview: CatalogPreview | undefined;
    const { model, checked } = await presets.add(
      name,
      body.name,
      requireActor(request),
      async (entry) => {
        const checked = sourceCheck === "false" ? null : await checkSourcesAtDoor(entry, plan);
        // As for a model added from a file: one no node of this fleet could hold even empty is refused, nothing stored.
        const nowhere = keepUnplaceable === "true" ? undefined : await fitsNowhere?.(resolveModel(entry, "runtime"));
        if (nowhere !== undefined) throw fitsNowhereRefusal(entry.name, nowhere);
        return checked;
      },
      request.dryRun ? (made) => (preview = made) : undefined,
    );
    const answer: AddedModelView = { ...modelView(model, catalog.declaredIn, undefined, { audience: request.audience }), sources_checked: checked };
    if (preview) return dryRunAnswer(answer, [catalogWriteChange(model.name, null, preview.after), ...(await previewReplicas({ models: preview.catalog.models }))]);
    return reply.status(201).send(answer);
  });
}
