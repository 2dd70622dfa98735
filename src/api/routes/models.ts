import type { FastifyInstance, FastifyRequest } from "fastify";
import { z } from "zod";
import { DomainError } from "../../errors/light.js";
import {
  engineNames,
  modelClasses,
  modelEntrySchema,
  profileSchema,
  scalingSchema,
  redactStrings,
  type Audience,
  checkSecretEnv,
} from "../../catalog/index.js";
import { catalogEdits, type CatalogEdit, type CatalogService, catalogWriteChange, type FitsNowhereCheck } from "../../services/index.js";
import { noReplicaPreview, type PreviewReplicas } from "../dry-run.js";
import { dryRunAnswer, type AddedModelView, type ModelState, type ModelView } from "../../protocol/index.js";
import { requireActor } from "../access.js";
import { modelView, noModelStatus, type ModelStatusSource, type ReplicaCountSource } from "../model-view.js";
import { parseBody, parseQuery } from "../parse-body.js";
import { checkSourcesAtDoor, sourceCheckQuery } from "../check-sources-at-door.js";
import type { PlanSettings } from "./plan.js";
import { isPaged, isWholeList, matchesText, pageOf, pageQueryShape } from "../lists/list-query.js";
import { ListCache, sendList, weakEtag } from "../lists/list-answer.js";
import { KeptItems, keptItem, keptListBody, type KeptItem } from "../lists/kept-items.js";
import { jsonListBody } from "../lists/json-list-body.js";

const nameParams = z.object({ name: z.string() });

const modelStates = ["external", "stopped", "on-demand", "pending", "degraded", "ready"] as const satisfies readonly ModelState[];
const modelsQuery = z.strictObject({
  ...pageQueryShape,
  state: z.enum(modelStates, { message: `one of ${modelStates.join(", ")}` }).optional(),
  class: z.enum(modelClasses, { message: `one of ${modelClasses.join(", ")}` }).optional(),
  owner: z.string().min(1).optional(),
  engine: z.enum(engineNames, { message: `one of ${engineNames.join(", ")}` }).optional(),
});
type ModelsQuery = z.infer<typeof modelsQuery>;

/** What a filter, a search or a page reads of a model, kept in place of its whole view. */
interface ModelFacets {
  readonly name: string;
  readonly state: ModelView["state"];
  readonly class: ModelView["class"];
  readonly owner: ModelView["owner"];
  readonly engines: readonly string[];
  readonly aliases: readonly string[];
  /** When its last failure's retry_at passes (ms), if it is shown: the list is built again then. */
  readonly retryAtMs: number | undefined;
}

function modelFacets(view: ModelView): ModelFacets {
  const retryAt = view.last_failure?.retry_at;
  return {
    name: view.name,
    state: view.state,
    class: view.class,
    owner: view.owner,
    engines: view.profiles.map((profile) => profile.engine),
    aliases: view.aliases,
    retryAtMs: retryAt ? Date.parse(retryAt) : undefined,
  };
}

function modelMatches(model: ModelFacets, query: ModelsQuery): boolean {
  return (
    (query.state === undefined || model.state === query.state) &&
    (query.class === undefined || model.class === query.class) &&
    (query.owner === undefined || model.owner === query.owner) &&
    (query.engine === undefined || model.engines.includes(query.engine)) &&
    matchesText(query.q, [model.name, model.owner, ...model.aliases])
  );
}

/** One audience's list of models, and its JSON as sent whole. */
interface BuiltModels {
  readonly items: readonly KeptItem<ModelFacets>[];
  readonly body: Buffer;
}

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

export function fitsNowhereRefusal(name: string, reason: string): DomainError {
  return new DomainError(
    "does_not_fit",
    `${name} fits nowhere in this fleet, even on nodes with every card free: ${reason}; nothing was stored`,
    "Freeing cards cannot help: give it more cards per replica, a quantisation or a shorter context (`llmgw ctl model plan SOURCE` shows what fits), or a node that can hold it; or store it anyway with `--keep-unplaceable` (`?keep_unplaceable=true`): it waits, unplaceable, until such a node joins.",
  );
}

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
  previewReplicas: PreviewReplicas = noReplicaPreview,
  /**
   * What the replica counts and statuses are read from, as a key that
   * changes whenever they do (the fleet's view key). Without it (counts from
   * elsewhere, as in tests) the list is built at every request.
   */
  fleetKey?: () => Promise<string>,
  /** Why a model added at runtime would fit nowhere in this fleet; without it (catalog-only apps) none is refused for that. */
  fitsNowhere?: FitsNowhereCheck,
): void {
  const view = async (name: string, audience: Audience) => {
    const [counts, statuses] = await Promise.all([replicaCounts(), modelStatus()]);
    return modelView(await catalog.get(name), catalog.declaredIn, counts.get(name), { audience, status: statuses.get(name) });
  };

  const cache = new ListCache<BuiltModels>();
  // One per audience: a read token's views mask what an admin's show.
  const items = new Map<Audience, KeptItems<KeptItem<ModelFacets>>>();
  const build = async (audience: Audience): Promise<{ value: BuiltModels; validUntilMs: number }> => {
    const [snapshot, counts, statuses] = await Promise.all([catalog.snapshot(), replicaCounts(), modelStatus()]);
    const kept = items.get(audience) ?? new KeptItems<KeptItem<ModelFacets>>();
    items.set(audience, kept);
    const listed = kept.list(
      snapshot.catalog.models,
      (model) => model.name,
      // A model's view is its catalog entry (the revision), its replica counts and the reconciler's status of it.
      (model) => `${snapshot.revision}|${JSON.stringify(counts.get(model.name) ?? null)}|${JSON.stringify(statuses.get(model.name) ?? null)}`,
      // Masked as every object answer is (a text answer skips the hook that masks them), once per change of the item.
      (model) => keptItem(redactStrings(modelView(model, catalog.declaredIn, counts.get(model.name), { audience, status: statuses.get(model.name) }), audience) as ModelView, modelFacets),
    );
    // A failure's retry_at is shown only until that moment: the list holds until the first of them passes.
    const nowMs = Date.now();
    const retries = listed.flatMap(({ facets }) => (facets.retryAtMs !== undefined && facets.retryAtMs > nowMs ? [facets.retryAtMs] : []));
    return { value: { items: listed, body: keptListBody("models", listed) }, validUntilMs: Math.min(Number.POSITIVE_INFINITY, ...retries) };
  };

  app.get("/api/v1/models", { config: { access: "read", api: { summary: "The catalog, filtered and paged", query: modelsQuery } } }, async (request, reply) => {
    const query = parseQuery(modelsQuery, request.query);
    const audience = request.audience;
    // The revision is read before the fleet's key and the build, as the catalog service reads it before the entries.
    const revision = (await catalog.snapshot()).revision;
    const key = fleetKey === undefined ? undefined : `${revision}|${await fleetKey()}|${audience}`;
    const built = key === undefined ? (await build(audience)).value : await cache.get(audience, key, () => build(audience));
    const whole = isWholeList(query);
    const etag = weakEtag(key ?? built.body.toString(), JSON.stringify(query));
    if (whole) return sendList(request, reply, etag, () => built.body);
    return sendList(request, reply, etag, () => {
      const matching = built.items.filter((item) => modelMatches(item.facets, query));
      if (!isPaged(query)) return jsonListBody("models", matching.map((item) => item.json));
      const page = pageOf(matching, (item) => item.facets.name, query);
      return jsonListBody("models", page.items.map((item) => item.json), page.next_cursor);
    });
  });

  app.get("/api/v1/models/:name", { config: { access: "read", api: { summary: "One model as it is in force" } } }, async (request) => view(nameParams.parse(request.params).name, request.audience));

  // A dry run builds the catalog the change would produce (refused as the change would be) and asks the reconciler what it would do with it.
  const change = async (request: FastifyRequest, edit: CatalogEdit) => {
    const { name } = nameParams.parse(request.params);
    if (!request.dryRun) {
      await catalog.apply(name, edit, requireActor(request));
      return view(name, request.audience);
    }
    const preview = await catalog.preview(name, edit.change, edit.mutate);
    const changes = [catalogWriteChange(name, preview.before, preview.after), ...(await previewReplicas({ models: preview.catalog.models }))];
    const [counts, statuses] = await Promise.all([replicaCounts(), modelStatus()]);
    return dryRunAnswer(modelView(preview.model, catalog.declaredIn, counts.get(name), { audience: request.audience, status: statuses.get(name) }), changes);
  };

  app.post("/api/v1/models", { config: { access: "admin", dryRun: true, api: { summary: "Add a model at runtime, after reading its sources", query: sourceCheckQuery, body: modelEntrySchema, status: 201 } } }, async (request, reply) => {
    const { source_check: sourceCheck, keep_unplaceable: keepUnplaceable } = parseQuery(sourceCheckQuery, request.query);
    const entry = parseBody(modelEntrySchema, request.body);
    // The server's own environment: a secret_env naming a variable it lacks is refused now, not at the first replica.
    checkSecretEnv(entry, process.env);
    // The catalog's own rules first (a taken name, a missing fallback): they answer at once, the sources may take seconds.
    const preview = await catalog.previewAdd(entry);
    const checked = sources && sourceCheck !== "false" ? await checkSourcesAtDoor(entry, sources) : null;
    // No room now is the reconciler's to wait out; too large for every node of its class even empty is refused here, nothing stored.
    const nowhere = keepUnplaceable === "true" ? undefined : await fitsNowhere?.(preview.model);
    if (nowhere !== undefined) throw fitsNowhereRefusal(entry.name, nowhere);
    if (request.dryRun) {
      const outcome: AddedModelView = { ...modelView(preview.model, catalog.declaredIn, undefined, { audience: request.audience }), sources_checked: checked };
      return dryRunAnswer(outcome, [catalogWriteChange(entry.name, null, entry), ...(await previewReplicas({ models: preview.catalog.models }))]);
    }
    const model = await catalog.add(entry, requireActor(request));
    const answer: AddedModelView = { ...modelView(model, catalog.declaredIn, undefined, { audience: request.audience }), sources_checked: checked };
    return reply.status(201).send(answer);
  });

  app.delete("/api/v1/models/:name", { config: { access: "admin", dryRun: true, api: { summary: "Remove a runtime model" } } }, async (request) => {
    const { name } = nameParams.parse(request.params);
    if (request.dryRun) {
      const preview = await catalog.previewRemove(name);
      return dryRunAnswer({ removed: name }, [catalogWriteChange(name, preview.before, null), ...(await previewReplicas({ models: preview.catalog.models }))]);
    }
    await catalog.remove(name, requireActor(request));
    return { removed: name };
  });

  app.post("/api/v1/models/:name/scale", { config: { access: "admin", dryRun: true, api: { summary: "Replicas kept running and the ceiling", body: scaleBody } } }, async (request) => {
    const edit = catalogEdits.scale(parseBody(scaleBody, request.body));
    if (request.dryRun) return await change(request, edit);
    // What the reconciler will say of the new count, known now (its dry run): the answer says it rather than leave it to `ctl models` later.
    const { name } = nameParams.parse(request.params);
    const preview = await catalog.preview(name, edit.change, edit.mutate);
    const refusal = (await previewReplicas({ models: preview.catalog.models, whole: true })).find((candidate) => candidate.kind === "model-unplaceable" && candidate.model === name);
    const answer = (await change(request, edit)) as ModelView;
    if (refusal) return { ...answer, placement: { state: "unplaceable", reason: refusal.summary.replace(`${name} would not be placed: `, "") } };
    // A refusal of the count before this change is the reconciler's word until its next pass: the forecast replaces it.
    if (answer.placement?.state === "unplaceable") return { ...answer, placement: { state: answer.replicas.desired > 0 ? "placed" : "waiting", reason: null } };
    return answer;
  });
  app.post("/api/v1/models/:name/resources", { config: { access: "admin", dryRun: true, api: { summary: "Host memory and cores one replica reserves", body: resourcesBody } } }, async (request) => change(request, catalogEdits.resources(parseBody(resourcesBody, request.body))));
  app.post("/api/v1/models/:name/class", { config: { access: "admin", dryRun: true, api: { summary: "The model's class", body: classBody } } }, async (request) => change(request, catalogEdits.setClass(parseBody(classBody, request.body).class)));
  app.post("/api/v1/models/:name/owner", { config: { access: "admin", dryRun: true, api: { summary: "Who owns the model", body: ownerBody } } }, async (request) => change(request, catalogEdits.setOwner(parseBody(ownerBody, request.body).owner)));
  app.post("/api/v1/models/:name/target", { config: { access: "admin", dryRun: true, api: { summary: "Grow toward max above this many requests in flight per replica", body: targetBody } } }, async (request) => change(request, catalogEdits.setTarget(parseBody(targetBody, request.body).in_flight)));
  app.post("/api/v1/models/:name/fallbacks", { config: { access: "admin", dryRun: true, api: { summary: "The fallbacks, in order", body: fallbacksBody } } }, async (request) => change(request, catalogEdits.setFallbacks(parseBody(fallbacksBody, request.body).fallbacks)));
}
