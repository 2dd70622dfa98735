import { DomainError } from "../../errors/light.js";
import type { RoutingModel, RoutingReplica, RoutingTable } from "../../protocol/index.js";
import { chooseReplica } from "../routing/choose-replica.js";
import { CachePlacement } from "../routing/cache-placement.js";
import type { CacheRoutingWeights } from "../routing/score-replicas.js";
import { ArmStats } from "../routing/arm-stats.js";
import { armOf, chooseArm, stickyKeyOf } from "../routing/choose-arm.js";
import { EjectedEndpoints } from "../routing/ejected-endpoints.js";
import { hashText } from "../routing/hash-text.js";
import { GatewayMetrics } from "../metrics/gateway-metrics.js";
import { SeriesSteps } from "../metrics/series-steps.js";
import { GatewayRefusal } from "../wire/gateway-refusal.js";
import type { GatewayCaller, GatewayPolicy } from "../policy/gateway-policy.js";
import { KeySlots } from "../policy/key-slots.js";
import { defaultServerLimits } from "../../catalog/index.js";
import { openAIErrorAnswer } from "../wire/openai-error-body.js";
import { writeOpenAIError } from "../wire/write-openai-error.js";
import { prefixText, type GatewayBody } from "../wire/prompt-text.js";
import { readGatewayBody, requireEndpointFields } from "./read-gateway-body.js";
import type { RoutingTarget } from "../routing/routing-snapshot.js";
import { RoutingState } from "../routing/routing-state.js";
import { estimateToolTokens, TokenCounter } from "./token-counter.js";
import { UpstreamError } from "../wire/upstream-error.js";
import { ComfyEndpoints, type ComfyEndpointsOptions } from "../comfy/comfy-endpoints.js";
import { wrongTaskError } from "../comfy/wrong-task-error.js";
import { endConnectionAfter } from "../wire/end-connection-after.js";
import type { GatewayEndpoint, GatewayExchange, GatewayLog } from "../wire/gateway-exchange.js";
import { forward, type Attempt, type Outcome } from "./attempt.js";
import { completionsDefaultMaxTokens, limitProblem } from "./request-limits.js";
import { readExtraBody } from "./read-extra-body.js";
import { approximateTokens, fallbackServes, generates, isExtraRoute, limitFields, refuseGenerationFromPoolingModel, refuseUnservedRoute, replicasServing, modelNotFound, unansweredError } from "./route-checks.js";
import { authorizationOf } from "../wire/authorization-of.js";
import type { IncomingHttpHeaders } from "node:http";
import { upstreamBody } from "./upstream-body.js";
import { UpstreamRoutes } from "./upstream-routes.js";
import { shuttingDown, snapshotWithReplica, type RefusedWhileWaiting, type ReplicaQueue } from "./wait-for-replica.js";

export interface GatewayOptions {
  readonly policy: GatewayPolicy;
  /**
   * Tells the control plane a model is wanted and has no ready replica (the
   * reconciler starts one for an on-demand model). Called without waiting;
   * a failure is the callee's to log.
   */
  readonly reportDemand: (model: string) => void;
  /** Where external models' keys are read from, by the variable the catalog names. */
  readonly environment: Readonly<Record<string, string | undefined>>;
  /** For what happens off the request path (a tokenizer that cannot be read); request lines go to the request's own log. */
  readonly log: GatewayLog;
  /** Requests that may wait per model for its first replica; one more is answered 429 at once. */
  readonly maxQueuePerModel?: number;
  /**
   * Requests one key may have in flight (limits.requests_per_key; default
   * 256), and where its operator sets it, named in the 429 past it.
   */
  readonly requestsPerKey?: { readonly max: number; readonly setting: string };
  /** Replicas tried per model before its fallbacks. */
  readonly maxAttempts?: number;
  readonly random?: () => number;
  /** Deadlines and the kept-image budget of the ComfyUI routes (images, image to 3D). */
  readonly comfy?: Pick<ComfyEndpointsOptions, "runDeadlineMs" | "keepImagesMs" | "keepImagesBytes">;
  /** The weights of `routing: cache` (server.yaml `gateway.cache_routing`); defaults without. */
  readonly cacheRouting?: CacheRoutingWeights;
}

/** Characters of the prompt's start that make up its prefix for affinity: a system prompt and the start of the context. */
const prefixLength = 1024;

/**
 * The OpenAI-compatible request path, the same for the server's own /v1 and
 * every `llmgw gateway`: authenticate and admit through the policy, resolve
 * the name in the routing table, refuse what is over the model's limits,
 * choose a replica, proxy the body through, retry what failed before the
 * first byte, and fall back in the catalog's order. It reads only the
 * routing table in memory; the store is never on this path.
 */
export class Gateway {
  readonly state = new RoutingState();
  readonly metrics = new GatewayMetrics();
  /** Requests, errors and latency per arm of models with a canary, for the canary's gate. */
  readonly arms = new ArmStats();
  /** Requests, errors, latency, time to first token and tokens per model over the last hour, for the console's charts. */
  readonly series = new SeriesSteps();
  readonly #routes: UpstreamRoutes;
  readonly #tokens: TokenCounter;
  readonly #inFlight = new Map<string, number>();
  /** Replica endpoints that refused a connection a moment ago, passed over by the choice: this process's own, not shared with other workers. */
  readonly #ejected = new EjectedEndpoints();
  readonly #isClosing = (): boolean => this.#closing.signal.aborted;
  readonly #closing = new AbortController();
  readonly #queue: ReplicaQueue;
  readonly #maxAttempts: number;
  readonly #random: () => number;
  readonly #slots: KeySlots;
  /** Where this gateway sent which prompt prefix, for models routed by cache. */
  readonly #cache: CachePlacement;
  #active = 0;
  #idle: (() => void) | undefined;
  /** POST /v1/images/generations and the other ComfyUI routes, with this gateway's table, policy and metrics. */
  readonly comfy: ComfyEndpoints;

  constructor(private readonly options: GatewayOptions) {
    this.#routes = new UpstreamRoutes(options.environment);
    this.#queue = { state: this.state, metrics: this.metrics, reportDemand: options.reportDemand, maxQueue: options.maxQueuePerModel ?? 256, closing: this.#closing.signal };
    this.#maxAttempts = options.maxAttempts ?? 3;
    this.#random = options.random ?? Math.random;
    this.#cache = new CachePlacement(options.cacheRouting);
    this.#slots = new KeySlots(options.requestsPerKey?.max ?? defaultServerLimits.requestsPerKey, options.requestsPerKey?.setting ?? "limits.requests_per_key in server.yaml");
    this.comfy = new ComfyEndpoints({ ...options.comfy, slots: this.#slots, policy: options.policy, state: this.state, metrics: this.metrics, reportDemand: options.reportDemand, closing: this.#closing.signal });
    this.#tokens = new TokenCounter((model, reason) => options.log.warn({ model, reason }, "tokenizer-unreadable: counting this model's prompts by estimate"));
    this.state.onSwap((snapshot) => {
      this.metrics.observeTable(snapshot);
      this.#tokens.prepare(snapshot.table.models);
      this.#routes.retain(snapshot.table.models);
      this.#cache.follow(snapshot.table);
    });
  }

  swap(table: RoutingTable): void {
    // A canary that appears in this table begins now here: its counts start in slots of their own.
    for (const model of table.models) {
      if (model.canary_weight !== undefined && this.state.current.model(model.name)?.canary_weight === undefined) this.arms.startEpoch(model.name, Date.now());
    }
    this.state.swap(table);
  }

  /** GET /v1/models: every name the caller may use (models, aliases, adapters). */
  listModels(authorization: string | undefined): { object: "list"; data: { id: string; object: "model"; created: number; owned_by: string; parent: string | null }[] } {
    const caller = this.options.policy.authenticate(authorization);
    const created = Math.floor(Date.now() / 1000);
    const data = this.state.current
      .names()
      .filter((entry) => caller.allowedModels === null || caller.allowedModels.includes(entry.name))
      .map((entry) => ({
        id: entry.name,
        object: "model" as const,
        created,
        owned_by: "llmgw",
        parent: entry.name === entry.model.name ? null : entry.model.name,
      }));
    return { object: "list", data };
  }

  /** GET /v1/models/{id}: one of the names listModels gives this caller, or model_not_found as for a name it may not use. */
  retrieveModel(authorization: string | undefined, id: string): ReturnType<Gateway["listModels"]>["data"][number] {
    const listed = this.listModels(authorization).data;
    const found = listed.find((entry) => entry.id === id);
    if (found === undefined) throw modelNotFound(id, listed.map((entry) => entry.id));
    return found;
  }

  /** The caller behind a request's key (a bearer token, or Anthropic's x-api-key); GatewayRefusal 401 without a good one. */
  authenticate(headers: IncomingHttpHeaders): GatewayCaller {
    return this.options.policy.authenticate(authorizationOf(headers));
  }

  /**
   * The prompt tokens of a chat body as this gateway counts them for its
   * limits (the model's tokenizer and chat template when loaded, else the
   * estimate), for a caller that may use the model. Counting costs the
   * engine nothing, so no request or token limit is charged.
   */
  countPromptTokens(caller: GatewayCaller, raw: Buffer): number {
    const body = readGatewayBody(raw);
    requireEndpointFields(body, "chat/completions");
    if (caller.allowedModels !== null && !caller.allowedModels.includes(body.model)) {
      throw new GatewayRefusal(403, "permission_error", "model_not_allowed", `API key "${caller.key ?? ""}" may not use "${body.model}"; it may use: ${caller.allowedModels.join(", ") || "no model"}.`);
    }
    const target = this.state.current.resolve(body.model);
    if (!target) throw modelNotFound(body.model);
    if (target.model.comfy) throw wrongTaskError(target.model, "text");
    return this.#tokens.count(target.model, body) + estimateToolTokens(body);
  }

  /** Answers one POST /v1/...; always writes the response itself (the route is hijacked). */
  async handle(endpoint: GatewayEndpoint, exchange: GatewayExchange): Promise<void> {
    const arrivedAt = performance.now();
    // Taken now: a response that has finished has already let go of its socket, which shutdown must still close.
    const socket = exchange.response.socket;
    this.#active += 1;
    let caller: GatewayCaller | undefined;
    let requested = "";
    let promptTokens = 0;
    let release: (() => void) | undefined;
    try {
      if (this.#closing.signal.aborted) throw shuttingDown();
      caller = this.authenticate(exchange.headers);
      // Held until this method returns: after the answer's last byte, a client's abort, or a stream's end.
      release = this.#slots.take(caller);
      const extra = isExtraRoute(endpoint) ? readExtraBody(exchange.body, endpoint) : undefined;
      const body = extra?.body ?? readGatewayBody(exchange.body);
      if (extra === undefined) requireEndpointFields(body, endpoint);
      requested = body.model;
      const snapshot = this.state.current;
      const target = snapshot.resolve(body.model);
      if (!target) {
        const allowed = caller.allowedModels;
        throw modelNotFound(body.model, snapshot.names().flatMap((entry) => (allowed === null || allowed.includes(entry.name) ? [entry.name] : [])));
      }
      if (target.model.comfy) throw wrongTaskError(target.model, "text");
      // A pooling model first: its refusal names the routes it does serve, which is the fix.
      refuseGenerationFromPoolingModel(target.model, endpoint);
      if (isExtraRoute(endpoint)) refuseUnservedRoute(target.model, endpoint);
      promptTokens = extra ? approximateTokens(extra.promptText) : this.#tokens.count(target.model, body);
      const maxTokens = extra ? extra.maxTokens : (body.max_completion_tokens ?? body.max_tokens ?? (endpoint === "completions" ? completionsDefaultMaxTokens : undefined));
      // Rerank and score read each pair on its own: their sum is not one prompt, so only a Responses request is held to the context.
      const overLimit = endpoint === "rerank" || endpoint === "score" ? undefined : limitProblem(target.model, promptTokens, maxTokens, endpoint, limitFields(endpoint, body));
      if (overLimit) throw overLimit;
      const admitting = this.options.policy.admit(caller, body.model, promptTokens + (maxTokens ?? 0));
      if (admitting) await admitting;
      const outcome = await this.#serve(endpoint, exchange, body, target, { arrivedAt, promptTokens, maxTokens, caller });
      this.#finish(outcome, arrivedAt);
    } catch (error) {
      const answer = openAIErrorAnswer(error, exchange.id);
      if (answer.status >= 500) exchange.log.warn({ model: requested, code: answer.body.error.code, err: error instanceof DomainError ? undefined : error }, answer.body.error.message);
      const model = this.state.current.resolve(requested)?.model.name ?? "unknown";
      // A refusal is usage too (a request and an error): on disk before the client has it, as an answer's is.
      const recorded = caller ? this.options.policy.record({ caller, model, promptTokens: 0, completionTokens: 0, error: true }) : undefined;
      if (recorded) await recorded;
      writeOpenAIError(exchange.response, exchange.id, answer);
      this.metrics.model(model).answered(answer.status);
      this.series.record({ model, at: Date.now(), latencyMs: performance.now() - arrivedAt, ttftMs: undefined, error: true, completionTokens: 0 });
    } finally {
      release?.();
      // While closing, a kept-alive connection would hold the server's close open until its idle timeout.
      if (this.#closing.signal.aborted) endConnectionAfter(exchange.response, socket);
      this.#active -= 1;
      if (this.#active === 0) this.#idle?.();
    }
  }

  /** Metrics and series of an answer that has left; its usage was recorded before its last byte (Attempt.record). */
  #finish(outcome: Outcome, arrivedAt: number): void {
    const modelMetrics = this.metrics.model(outcome.model);
    modelMetrics.answered(outcome.status);
    const latencyMs = performance.now() - arrivedAt;
    modelMetrics.latency.observe(latencyMs / 1000);
    if (outcome.usage) modelMetrics.countTokens(outcome.usage.promptTokens, outcome.usage.completionTokens);
    this.series.record({ model: outcome.model, at: Date.now(), latencyMs, ttftMs: outcome.ttftMs, error: outcome.failed || outcome.status >= 500, completionTokens: outcome.usage?.completionTokens ?? 0 });
  }

  /**
   * The model asked for, then its fallbacks in order. A model is left for the
   * next when it has no replica within its deadline, or when every replica
   * tried failed before its first byte.
   */
  async #serve(
    endpoint: GatewayEndpoint,
    exchange: GatewayExchange,
    body: GatewayBody,
    target: RoutingTarget,
    counted: { arrivedAt: number; promptTokens: number; maxTokens: number | undefined; caller: GatewayCaller },
  ): Promise<Outcome> {
    const fallbacks = target.model.fallbacks;
    const stream = generates(endpoint) && body.stream === true;
    // The Responses and Messages APIs have no stream_options: their last events always carry the usage.
    const dropUsageEvent = stream && (endpoint === "chat/completions" || endpoint === "completions") && body.stream_options?.include_usage !== true;
    let loading: RoutingModel | undefined;
    let unavailable: RoutingModel | undefined;
    let lastFailure: UpstreamError | undefined;
    for (let position = 0; position <= fallbacks.length; position += 1) {
      const isFallback = position > 0;
      let candidate = target;
      if (isFallback) {
        // Read from the table in force when its turn comes: the first may have waited for a replica.
        const fallback = this.state.current.model(fallbacks[position - 1] as string);
        if (!fallback) continue;
        candidate = { model: fallback, adapter: undefined };
      }
      // A fallback with a smaller context than the request needs cannot answer it either.
      if (isFallback && limitProblem(candidate.model, counted.promptTokens, counted.maxTokens, endpoint, limitFields(endpoint, body))) continue;
      if (isFallback && !fallbackServes(candidate.model, endpoint)) continue;
      if (isFallback && candidate.model.pooling !== undefined && generates(endpoint)) continue;
      const answeringName = candidate.adapter?.name ?? candidate.model.name;
      const attempt: Attempt = {
        target: candidate,
        body,
        answeringName,
        payload: upstreamBody(exchange.body, body, candidate, dropUsageEvent),
        stream,
        dropUsageEvent,
        arrivedAt: counted.arrivedAt,
        exchange,
        endpoint,
        record: (outcome) =>
          this.options.policy.record({
            caller: counted.caller,
            model: answeringName,
            promptTokens: outcome.usage?.promptTokens ?? counted.promptTokens,
            completionTokens: outcome.usage?.completionTokens ?? 0,
            error: outcome.failed,
          }),
      };
      try {
        if (candidate.model.external) return await this.#external(attempt, candidate.model);
        // Placement's word is in the table: waiting out the deadline for a replica that will not come helps no one.
        if (candidate.model.unavailable && candidate.model.replicas.length === 0) {
          unavailable ??= candidate.model;
          continue;
        }
        const served = await this.#replicas(attempt, isFallback);
        if (served === "no-replica") {
          loading ??= candidate.model;
          continue;
        }
        if ("refused" in served) {
          unavailable ??= served.refused;
          continue;
        }
        return served;
      } catch (error) {
        if (!(error instanceof UpstreamError) || !error.retryable) throw error;
        lastFailure = error;
        this.metrics.retries.inc({ model: candidate.model.name });
        exchange.log.warn({ model: candidate.model.name, upstream: error.upstream, status: error.status }, `upstream-failed: ${error.message}`);
      }
    }
    throw unansweredError(target.model, this.state.current, { loading, unavailable, lastFailure });
  }

  /** Serves from the model's replicas, waiting for a first one when it has none; "no-replica" when none came in time. */
  async #replicas(attempt: Attempt, isFallback: boolean): Promise<Outcome | "no-replica" | RefusedWhileWaiting> {
    const model = attempt.target.model;
    const snapshot = await snapshotWithReplica(this.#queue, model, isFallback, attempt.exchange.response);
    if (snapshot === "no-replica" || "refused" in snapshot) return snapshot;
    const replicas = replicasServing(snapshot.model(model.name)?.replicas ?? [], attempt.endpoint);
    const prefixHash = model.routing === "prefix" ? hashText(prefixText(attempt.body, prefixLength)) : undefined;
    const cache = model.routing === "cache" ? this.#cache.lookup(model.name, attempt.body) : undefined;
    const tried = new Set<string>();
    let lastFailure: UpstreamError | undefined;
    const arm = model.canary_weight === undefined ? undefined : chooseArm(model.canary_weight, stickyKeyOf(attempt.body.user, attempt.exchange.headers["x-session-id"]), this.#random);
    for (let count = 0; count < this.#maxAttempts; count += 1) {
      const left = replicas.filter((candidate) => !tried.has(candidate.id));
      const replica = chooseReplica({
        candidates: left,
        arm,
        ejected: this.#ejected.isEjected,
        inFlight: this.#inFlight,
        prefixHash: cache?.prefixHash ?? prefixHash,
        cache: cache?.knowledge,
        random: this.#random,
      });
      if (!replica) break;
      if (cache) this.#cache.sent(model.name, cache, replica);
      tried.add(replica.id);
      if (arm !== undefined) attempt.exchange.response.setHeader("x-llmgw-arm", armOf(replica));
      try {
        const outcome = await this.#toReplica(attempt, replica);
        if (arm !== undefined) this.#countArm(model.name, replica, attempt, outcome.status >= 500 || (outcome.failed && outcome.status < 400));
        return outcome;
      } catch (error) {
        if (arm !== undefined) this.#countArm(model.name, replica, attempt, true);
        if (!(error instanceof UpstreamError) || !error.retryable) throw error;
        lastFailure = error;
        this.metrics.retries.inc({ model: model.name });
        const ejected = this.#ejected.noteFailure(replica, error);
        if (ejected) this.metrics.ejections.inc({ model: model.name });
        attempt.exchange.log.warn({ model: model.name, replica: replica.id, status: error.status, ejected }, `replica-attempt-failed: ${error.message}`);
      }
    }
    throw lastFailure ?? new UpstreamError(undefined, true, model.name, "no ready replica left to try");
  }

  #countArm(model: string, replica: RoutingReplica, attempt: Attempt, error: boolean): void {
    this.arms.record(model, armOf(replica), performance.now() - attempt.arrivedAt, error, Date.now());
  }

  async #toReplica(attempt: Attempt, replica: RoutingReplica): Promise<Outcome> {
    const route = this.#routes.replica(replica);
    this.#inFlight.set(replica.id, (this.#inFlight.get(replica.id) ?? 0) + 1);
    try {
      return await forward(attempt, route, this.metrics, this.#isClosing);
    } finally {
      const left = (this.#inFlight.get(replica.id) ?? 1) - 1;
      if (left <= 0) this.#inFlight.delete(replica.id);
      else this.#inFlight.set(replica.id, left);
    }
  }

  async #external(attempt: Attempt, model: RoutingModel): Promise<Outcome> {
    return await forward(attempt, this.#routes.external(model), this.metrics, this.#isClosing);
  }

  /** Aborted when the gateway starts closing: its front stops reading new requests then. */
  get closingSignal(): AbortSignal {
    return this.#closing.signal;
  }

  /** Stops taking requests: queued ones are answered 503 at once, those being answered finish; then the pools close. */
  async close(): Promise<void> {
    this.#closing.abort();
    this.#cache.close();
    if (this.#active > 0) await new Promise<void>((resolve) => (this.#idle = resolve));
    await this.#routes.close();
  }
}
