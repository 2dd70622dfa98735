import { randomInt } from "node:crypto";
import type { IncomingHttpHeaders, ServerResponse } from "node:http";
import { z } from "zod";
import { comfyTask } from "../../catalog/comfy-schema.js";
import { DomainError } from "../../errors/domain-error.js";
import { modelUnavailable } from "../wire/model-unavailable.js";
import type { RoutingComfy, RoutingModel, RoutingReplica } from "../../protocol/routing-table.js";
import { chooseReplica } from "../routing/choose-replica.js";
import type { GatewayMetrics } from "../metrics/gateway-metrics.js";
import type { KeySlots } from "../policy/key-slots.js";
import type { GatewayCaller, GatewayPolicy, UsageRecord } from "../policy/gateway-policy.js";
import type { GatewayLog } from "../wire/gateway-exchange.js";
import { headerText } from "../wire/header-text.js";
import { openAIErrorAnswer } from "../wire/openai-error-body.js";
import { RetryLater } from "../wire/retry-later.js";
import type { RoutingState } from "../routing/routing-state.js";
import { UpstreamError } from "../upstream/upstream-error.js";
import { writeOpenAIError } from "../wire/write-openai-error.js";
import { fillWorkflow, type ComfyValues } from "./fill-workflow.js";
import { keptImagesPath, type ComfyRoute } from "./comfy-route.js";
import { KeptImages } from "./kept-images.js";
import { readMeshRequest } from "./read-mesh-request.js";
import { parseJsonBody } from "./parse-json-body.js";
import { runComfyWorkflow, uploadImage, type ComfyEngine, type ComfyOutputFile } from "./run-comfy-workflow.js";
import { wrongTaskError } from "./wrong-task-error.js";

export interface ComfyExchange {
  readonly id: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
  readonly response: ServerResponse;
  readonly log: GatewayLog;
  /** scheme://host as the client reached this gateway, for the URLs of kept images. */
  readonly baseUrl: string;
}

/** One request as the endpoints carry it: the exchange, and a signal that fires when its client goes away. */
interface ComfyRequest extends ComfyExchange {
  readonly gone: AbortSignal;
}

export interface ComfyEndpointsOptions {
  readonly policy: GatewayPolicy;
  readonly state: RoutingState;
  readonly metrics: GatewayMetrics;
  readonly reportDemand: (model: string) => void;
  readonly closing: AbortSignal;
  /** Requests in flight per key, shared with the text routes: a key's images count against the same cap. */
  readonly slots?: KeySlots;
  /** How long one workflow may run on the engine; image-to-3D takes minutes on a real card. */
  readonly runDeadlineMs?: number;
  /** How long a `url` image is kept, and the most bytes kept in all. */
  readonly keepImagesMs?: number;
  readonly keepImagesBytes?: number;
}

/** A FLUX or SDXL image at 1024² takes seconds; a Hunyuan3D mesh a minute or two: ten minutes is past both with a queue. */
export const defaultComfyRunDeadlineMs = 600_000;
/** OpenAI keeps its image URLs for an hour. */
export const defaultKeepImagesMs = 3_600_000;
/** About 200 PNGs at 1024²: bounded, so unfetched images cannot exhaust the gateway's memory. */
export const defaultKeepImagesBytes = 256 * 1024 * 1024;

/** Replicas tried per request before giving up, as for text requests. */
const maxAttempts = 3;
const loadingRetryAfterSeconds = 30;
/** The size limits of ComfyUI's latent nodes (EmptyLatentImage: 16 to 16384, steps of 8), kept to what a card renders. */
const maxSide = 4096;
/** OpenAI's own limit for n. */
const maxImages = 10;

const sizePattern = /^(\d{1,5})x(\d{1,5})$/;

// Loose: OpenAI's clients send fields this gateway does not use (quality, style, user); those it uses are checked.
const imagesRequestSchema = z.looseObject({
  model: z.string({ message: "required: the model to use, as GET /v1/models lists it" }).min(1, { message: "required: the model to use, as GET /v1/models lists it" }),
  prompt: z.string({ message: "required: the text of the image to make" }).min(1, { message: "must not be empty: the text of the image to make" }).max(32_000, { message: "at most 32000 characters" }),
  n: z.number({ message: `a whole number of images, 1 to ${maxImages}` }).int({ message: `a whole number of images, 1 to ${maxImages}` }).min(1, { message: `a whole number of images, 1 to ${maxImages}` }).max(maxImages, { message: `a whole number of images, 1 to ${maxImages}` }).nullish(),
  size: z
    .string({ message: 'WIDTHxHEIGHT in pixels, such as "1024x1024"' })
    .refine((text) => text === "auto" || sizeOf(text) !== undefined, { message: `WIDTHxHEIGHT in pixels, each a multiple of 8 from 64 to ${maxSide}, such as "1024x1024" (or "auto" for the workflow's own)` })
    .nullish(),
  response_format: z.enum(["b64_json", "url"], { message: "b64_json (the image in the answer) or url (a link this gateway serves for an hour)" }).nullish(),
  /** Not OpenAI's: the same seed and prompt give the same image, for a workflow that takes a seed. */
  seed: z.number({ message: "a whole number from 0" }).int({ message: "a whole number from 0" }).min(0, { message: "a whole number from 0" }).max(Number.MAX_SAFE_INTEGER).nullish(),
});

function sizeOf(text: string): { width: number; height: number } | undefined {
  const match = sizePattern.exec(text);
  if (!match) return undefined;
  const width = Number(match[1]);
  const height = Number(match[2]);
  const fits = (side: number) => side >= 64 && side <= maxSide && side % 8 === 0;
  return fits(width) && fits(height) ? { width, height } : undefined;
}

/**
 * The gateway's ComfyUI API: POST /v1/images/generations in OpenAI's shape,
 * POST /v1/llmgw/comfy/{model} for image to 3D, and GET /v1/llmgw/images/{id}
 * for images answered as `url`. Keys, model scopes, metrics and usage as for
 * every /v1 request; the workflow is filled in here and run on a replica
 * through ComfyUI's own API.
 */
export class ComfyEndpoints {
  readonly #inFlight = new Map<string, number>();
  readonly #kept: KeptImages;
  readonly #deadlineMs: number;

  constructor(private readonly options: ComfyEndpointsOptions) {
    this.#kept = new KeptImages(options.keepImagesMs ?? defaultKeepImagesMs, options.keepImagesBytes ?? defaultKeepImagesBytes);
    this.#deadlineMs = options.runDeadlineMs ?? defaultComfyRunDeadlineMs;
  }

  /** Answers one ComfyUI route; always writes the response itself. */
  async handle(route: ComfyRoute, received: ComfyExchange): Promise<void> {
    const exchange: ComfyRequest = { ...received, gone: clientGone(received.response) };
    if (route.kind === "kept-image") {
      this.#serveKept(route.id, exchange);
      return;
    }
    const arrivedAt = performance.now();
    let caller: GatewayCaller | undefined;
    let modelName = "unknown";
    let release: (() => void) | undefined;
    try {
      if (this.options.closing.aborted) {
        throw new RetryLater("gateway_shutting_down", "this gateway is shutting down", "Send the request to another gateway, or again in a moment.", 1);
      }
      caller = this.options.policy.authenticate(headerText(exchange.headers.authorization));
      release = this.options.slots?.take(caller);
      if (route.kind === "images") {
        const body = parseImagesRequest(exchange.body);
        const model = this.#comfyModel(body.model, "images");
        modelName = model.name;
        // Awaited: with several workers the limits are decided in the primary, and a refusal comes as a rejected promise.
        await this.options.policy.admit(caller, body.model, 0);
        await this.#answerImages(model, body, exchange);
      } else {
        const model = this.#comfyModel(route.model, "image-to-3d");
        modelName = model.name;
        await this.options.policy.admit(caller, route.model, 0);
        await this.#answerMesh(model, exchange);
      }
      const metrics = this.options.metrics.model(modelName);
      metrics.answered(200);
      metrics.latency.observe((performance.now() - arrivedAt) / 1000);
      this.#record(exchange, { caller, model: modelName, promptTokens: 0, completionTokens: 0, error: false });
    } catch (error) {
      const answer = openAIErrorAnswer(error, exchange.id);
      if (answer.status >= 500) exchange.log.warn({ model: modelName, code: answer.body.error.code, err: error instanceof DomainError ? undefined : error }, answer.body.error.message);
      writeOpenAIError(exchange.response, exchange.id, answer);
      this.options.metrics.model(modelName).answered(answer.status);
      if (caller) this.#record(exchange, { caller, model: modelName, promptTokens: 0, completionTokens: 0, error: true });
    } finally {
      release?.();
    }
  }

  /** The ComfyUI model behind a name, refusing a model of another task with the tasks it has. */
  /**
   * The answer is already with the client: a usage write that fails (the
   * journal's disk) is logged, never an unhandled rejection that ends the
   * gateway.
   */
  #record(exchange: ComfyRequest, usage: UsageRecord): void {
    const recorded = this.options.policy.record(usage);
    if (recorded) recorded.catch((error: unknown) => exchange.log.warn({ model: usage.model, err: error }, "could not record an images request's usage"));
  }

  #comfyModel(name: string, task: "images" | "image-to-3d"): RoutingModel & { comfy: RoutingComfy } {
    const target = this.options.state.current.resolve(name);
    if (!target) throw new DomainError("model_not_found", `no model named ${name} at this gateway`, "GET /v1/models lists the models, aliases and adapters you may use.");
    const { model } = target;
    if (!model.comfy || comfyTask(model.comfy.outputs) !== task) throw wrongTaskError(model, task);
    return model as RoutingModel & { comfy: RoutingComfy };
  }

  async #answerImages(model: RoutingModel & { comfy: RoutingComfy }, body: z.infer<typeof imagesRequestSchema>, exchange: ComfyRequest): Promise<void> {
    const count = body.n ?? 1;
    const size = body.size === undefined || body.size === null || body.size === "auto" ? undefined : sizeOf(body.size);
    const seed = body.seed ?? randomInt(0, 2 ** 32);
    const batched = model.comfy.inputs.batch !== undefined;
    const values: ComfyValues = { prompt: body.prompt, seed, ...(size ? { width: size.width, height: size.height } : {}), ...(batched ? { batch: count } : {}) };
    const files: ComfyOutputFile[] = [];
    // A workflow with no batch size runs once per image, each with its own seed.
    for (let run = 0; run < (batched ? 1 : count); run += 1) {
      const workflow = fillWorkflow(model.name, model.comfy, { ...values, seed: seed + run });
      files.push(...(await this.#onSomeReplica(model, exchange, (engine) => runComfyWorkflow(engine, workflow, { deadlineMs: this.#deadlineMs, signal: exchange.gone, wantedKinds: ["images"] }))));
    }
    const images = files.slice(0, count);
    const created = Math.floor(Date.now() / 1000);
    const format = body.response_format ?? "b64_json";
    const data = images.map((file) => (format === "url" ? { url: `${exchange.baseUrl}${keptImagesPath}${this.#kept.keep(file.bytes, file.contentType)}` } : { b64_json: file.bytes.toString("base64") }));
    writeJson(exchange, { created, data });
  }

  async #answerMesh(model: RoutingModel & { comfy: RoutingComfy }, exchange: ComfyRequest): Promise<void> {
    const mesh = await readMeshRequest(exchange.headers, exchange.body);
    // The image is uploaded to the replica that runs the workflow: each ComfyUI has its own input folder.
    const files = await this.#onSomeReplica(model, exchange, async (engine) => {
      const uploaded = await uploadImage(engine, mesh.image, mesh.filename);
      const workflow = fillWorkflow(model.name, model.comfy, { image: uploaded, seed: mesh.seed ?? randomInt(0, 2 ** 32) });
      return await runComfyWorkflow(engine, workflow, { deadlineMs: this.#deadlineMs, signal: exchange.gone, wantedKinds: ["3d", "meshes"] });
    });
    const file = files[0] as ComfyOutputFile;
    if (mesh.responseFormat === "b64_json") {
      writeJson(exchange, { created: Math.floor(Date.now() / 1000), data: [{ b64_json: file.bytes.toString("base64"), content_type: file.contentType, filename: file.filename }] });
      return;
    }
    exchange.response.writeHead(200, {
      "content-type": "model/gltf-binary",
      "content-length": String(file.bytes.length),
      "content-disposition": `attachment; filename="${file.filename.replace(/[^A-Za-z0-9._-]/g, "_")}"`,
      "x-request-id": exchange.id,
    });
    exchange.response.end(file.bytes);
  }

  /** Work on one ready replica, tried on another when the first could not take it (refused, reset, 5xx before the prompt was taken). */
  async #onSomeReplica<T>(model: RoutingModel, exchange: ComfyRequest, work: (engine: ComfyEngine) => Promise<T>): Promise<T> {
    const replicas = await this.#readyReplicas(model, exchange);
    const tried = new Set<string>();
    let lastFailure: UpstreamError | undefined;
    for (let attempt = 0; attempt < maxAttempts; attempt += 1) {
      const chosen = chooseReplica({ candidates: replicas.filter((candidate) => !tried.has(candidate.id)), inFlight: this.#inFlight, prefixHash: undefined, random: Math.random });
      if (!chosen) break;
      tried.add(chosen.id);
      try {
        return await this.#onReplica(model, chosen, exchange, work);
      } catch (error) {
        if (!(error instanceof UpstreamError) || !error.retryable) throw error;
        lastFailure = error;
        this.options.metrics.retries.inc({ model: model.name });
        exchange.log.warn({ model: model.name, replica: chosen.id, status: error.status }, `replica-attempt-failed: ${error.message}`);
      }
    }
    throw upstreamFailed(model, lastFailure);
  }

  async #onReplica<T>(model: RoutingModel, replica: RoutingReplica, exchange: ComfyExchange, work: (engine: ComfyEngine) => Promise<T>): Promise<T> {
    const metrics = this.options.metrics.model(model.name);
    this.#inFlight.set(replica.id, (this.#inFlight.get(replica.id) ?? 0) + 1);
    metrics.inFlight += 1;
    try {
      return await work({
        origin: new URL(replica.endpoint).origin,
        authorization: replica.api_key === undefined ? undefined : `Bearer ${replica.api_key}`,
        upstream: `replica ${replica.id}`,
        requestId: exchange.id,
      });
    } finally {
      metrics.inFlight -= 1;
      const left = (this.#inFlight.get(replica.id) ?? 1) - 1;
      if (left <= 0) this.#inFlight.delete(replica.id);
      else this.#inFlight.set(replica.id, left);
    }
  }

  /** The model's ready replicas, waiting (bounded) for a first one as text requests do for an on-demand model. */
  async #readyReplicas(model: RoutingModel, exchange: ComfyRequest): Promise<readonly RoutingReplica[]> {
    let snapshot = this.options.state.current;
    if (!snapshot.hasReadyReplica(model.name)) {
      this.options.reportDemand(model.name);
      const ready = await this.options.state.waitForReady(model.name, model.queue_timeout_ms, AbortSignal.any([exchange.gone, this.options.closing]));
      // Placement refused it (before or while the request waited): its reason now, not at the deadline.
      const refused = ready?.hasReadyReplica(model.name) ? undefined : ready?.refusal(model.name);
      if (refused !== undefined) throw modelUnavailable(model.name, refused, false);
      if (!ready) {
        throw new RetryLater(
          "model_loading",
          `model ${model.name} is loading: no replica became ready within ${Math.round(model.queue_timeout_ms / 1000)} s`,
          `Retry in ${loadingRetryAfterSeconds} s; \`llmgw ctl replicas --model ${model.name}\` shows its progress.`,
          loadingRetryAfterSeconds,
        );
      }
      snapshot = ready;
    }
    return snapshot.model(model.name)?.replicas ?? [];
  }

  #serveKept(id: string, exchange: ComfyExchange): void {
    const image = this.#kept.get(id);
    if (!image) {
      writeOpenAIError(
        exchange.response,
        exchange.id,
        openAIErrorAnswer(
          new DomainError("image_expired", `no image ${id} at this gateway`, `Images answered as url are kept ${Math.round(this.#kept.keepMs / 60_000)} minutes by the gateway that made them; ask with response_format b64_json to keep it yourself.`),
          exchange.id,
        ),
      );
      return;
    }
    exchange.response.writeHead(200, { "content-type": image.contentType, "content-length": String(image.bytes.length), "cache-control": "private, max-age=3600", "x-request-id": exchange.id });
    exchange.response.end(image.bytes);
  }
}

function parseImagesRequest(raw: Buffer): z.infer<typeof imagesRequestSchema> {
  return parseJsonBody(imagesRequestSchema, raw, {
    notJson: "the request body is not JSON",
    notJsonHint: "Send a JSON body, as OpenAI's images API takes it, with content-type: application/json.",
    fix: "Correct the field named; OpenAI's images API reference lists them.",
  });
}

function upstreamFailed(model: RoutingModel, lastFailure: UpstreamError | undefined): DomainError {
  return new DomainError(
    "upstream_failed",
    `every replica tried for ${model.name} failed before taking the workflow (last: ${lastFailure?.upstream ?? "none"}: ${lastFailure?.message ?? "no replica"})`,
    "Retry; if it persists, `llmgw ctl replicas` shows which replicas are failing.",
  );
}

/** Aborts when the client goes away before its answer: the engine's work is then nobody's. */
function clientGone(response: ServerResponse): AbortSignal {
  const controller = new AbortController();
  response.once("close", () => {
    if (!response.writableFinished) controller.abort();
  });
  return controller.signal;
}

function writeJson(exchange: ComfyExchange, body: unknown): void {
  const text = JSON.stringify(body);
  exchange.response.writeHead(200, { "content-type": "application/json; charset=utf-8", "content-length": String(Buffer.byteLength(text)), "x-request-id": exchange.id });
  exchange.response.end(text);
}
