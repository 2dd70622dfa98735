import type { IncomingHttpHeaders } from "node:http";
import type { Socket } from "node:net";
import { DomainError } from "../errors/domain-error.js";
import type { RoutingModel, RoutingReplica, RoutingTable } from "../protocol/routing-table.js";
import { chooseReplica } from "./choose-replica.js";
import { ArmStats } from "./arm-stats.js";
import { armOf, chooseArm, sameArmFirst, stickyKeyOf } from "./choose-arm.js";
import { hashText } from "./hash-text.js";
import { GatewayMetrics } from "./gateway-metrics.js";
import type { GatewayCaller, GatewayPolicy } from "./gateway-policy.js";
import { openAIErrorAnswer } from "./openai-error-body.js";
import { writeOpenAIError } from "./write-openai-error.js";
import { RetryLater } from "./retry-later.js";
import { prefixText, type GatewayBody } from "./prompt-text.js";
import { readGatewayBody } from "./read-gateway-body.js";
import type { RoutingTarget } from "./routing-snapshot.js";
import { RoutingState } from "./routing-state.js";
import { ProxiedAnswer } from "./proxied-answer.js";
import type { ReportedUsage } from "./usage-in.js";
import { TokenCounter } from "./token-counter.js";
import { UpstreamError } from "./upstream-error.js";
import { UpstreamPools } from "./upstream-pools.js";
import type { UpstreamDispatcher } from "./upstream-dispatcher.js";
import { headerText } from "./header-text.js";
import { ComfyEndpoints, type ComfyEndpointsOptions } from "./comfy/comfy-endpoints.js";
import { wrongTaskError } from "./comfy/wrong-task-error.js";
import type { V1Response } from "./v1-response.js";

export interface GatewayLog {
  warn(facts: Record<string, unknown>, message: string): void;
}

export type GatewayEndpoint = "chat/completions" | "completions" | "embeddings";

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
  /** Replicas tried per model before its fallbacks. */
  readonly maxAttempts?: number;
  readonly random?: () => number;
  /** Deadlines and the kept-image budget of the ComfyUI routes (images, image to 3D). */
  readonly comfy?: Pick<ComfyEndpointsOptions, "runDeadlineMs" | "keepImagesMs" | "keepImagesBytes">;
}

/** What the gateway reads of the request: its raw body, headers and id, and the raw response to write. */
export interface GatewayExchange {
  readonly id: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
  readonly response: V1Response;
  /** Warnings about this request: the request id is on every line. */
  readonly log: GatewayLog;
}

/** Characters of the prompt's start that make up its prefix for affinity: a system prompt and the start of the context. */
const prefixLength = 1024;

/** Seconds a client is told to wait when a model is still loading: a GPU engine takes tens of seconds to a few minutes. */
const loadingRetryAfterSeconds = 30;

interface Attempt {
  readonly target: RoutingTarget;
  readonly body: GatewayBody;
  readonly answeringName: string;
  readonly payload: Buffer;
  readonly stream: boolean;
  readonly dropUsageEvent: boolean;
  readonly arrivedAt: number;
  readonly exchange: GatewayExchange;
  readonly endpoint: GatewayEndpoint;
}

/** One upstream as the request path uses it, made once per routing table. */
interface UpstreamRoute {
  readonly pool: UpstreamDispatcher;
  readonly paths: Readonly<Record<GatewayEndpoint, string>>;
  /** The header value, with the replica's or provider's key; never logged. */
  readonly authorization: string | undefined;
  /** "replica ID" or "external NAME", for errors and logs. */
  readonly upstream: string;
  readonly refusedKeyVariable: string | undefined;
}

interface Outcome {
  readonly status: number;
  readonly model: string;
  readonly usage: ReportedUsage | undefined;
  readonly failed: boolean;
}

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
  readonly #pools = new UpstreamPools();
  readonly #tokens: TokenCounter;
  readonly #inFlight = new Map<string, number>();
  /** Where each replica and external model of the table in force is reached: made once per table, not per request. */
  #replicaRoutes = new WeakMap<RoutingReplica, UpstreamRoute>();
  #externalRoutes = new WeakMap<RoutingModel, UpstreamRoute>();
  readonly #isClosing = (): boolean => this.#closing.signal.aborted;
  readonly #closing = new AbortController();
  readonly #maxQueue: number;
  readonly #maxAttempts: number;
  readonly #random: () => number;
  #active = 0;
  #idle: (() => void) | undefined;
  /** POST /v1/images/generations and the other ComfyUI routes, with this gateway's table, policy and metrics. */
  readonly comfy: ComfyEndpoints;

  constructor(private readonly options: GatewayOptions) {
    this.#maxQueue = options.maxQueuePerModel ?? 256;
    this.#maxAttempts = options.maxAttempts ?? 3;
    this.#random = options.random ?? Math.random;
    this.comfy = new ComfyEndpoints({ ...options.comfy, policy: options.policy, state: this.state, metrics: this.metrics, reportDemand: options.reportDemand, closing: this.#closing.signal });
    this.#tokens = new TokenCounter((model, reason) => options.log.warn({ model, reason }, "tokenizer-unreadable: counting this model's prompts by estimate"));
    this.state.onSwap((snapshot) => {
      this.metrics.observeTable(snapshot);
      this.#tokens.prepare(snapshot.table.models);
      const origins = new Set<string>();
      for (const model of snapshot.table.models) {
        for (const replica of model.replicas) origins.add(new URL(replica.endpoint).origin);
        if (model.external) origins.add(new URL(model.external.base_url).origin);
      }
      this.#pools.retain(origins);
      this.#replicaRoutes = new WeakMap();
      this.#externalRoutes = new WeakMap();
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

  /** Answers one POST /v1/...; always writes the response itself (the route is hijacked). */
  async handle(endpoint: GatewayEndpoint, exchange: GatewayExchange): Promise<void> {
    const arrivedAt = performance.now();
    // Taken now: a response that has finished has already let go of its socket, which shutdown must still close.
    const socket = exchange.response.socket;
    this.#active += 1;
    let caller: GatewayCaller | undefined;
    let requested = "";
    let promptTokens = 0;
    try {
      if (this.#closing.signal.aborted) {
        throw new RetryLater("gateway_shutting_down", "this gateway is shutting down", "Send the request to another gateway, or again in a moment.", 1);
      }
      caller = this.options.policy.authenticate(headerText(exchange.headers.authorization));
      const body = readGatewayBody(exchange.body);
      requested = body.model;
      const snapshot = this.state.current;
      const target = snapshot.resolve(body.model);
      if (!target) {
        throw new DomainError("model_not_found", `no model named ${body.model} at this gateway`, "GET /v1/models lists the models, aliases and adapters you may use.");
      }
      if (target.model.comfy) throw wrongTaskError(target.model, "text");
      promptTokens = this.#tokens.count(target.model, body);
      const maxTokens = body.max_completion_tokens ?? body.max_tokens ?? (endpoint === "completions" ? completionsDefaultMaxTokens : undefined);
      const overLimit = limitProblem(target.model, promptTokens, maxTokens, endpoint);
      if (overLimit) throw overLimit;
      const admitting = this.options.policy.admit(caller, body.model, promptTokens + (maxTokens ?? 0));
      if (admitting) await admitting;
      const outcome = await this.#serve(endpoint, exchange, body, target, { arrivedAt, promptTokens, maxTokens });
      this.#finish(caller, outcome, promptTokens, arrivedAt);
    } catch (error) {
      const answer = openAIErrorAnswer(error, exchange.id);
      if (answer.status >= 500) exchange.log.warn({ model: requested, code: answer.body.error.code, err: error instanceof DomainError ? undefined : error }, answer.body.error.message);
      writeOpenAIError(exchange.response, exchange.id, answer);
      const model = this.state.current.resolve(requested)?.model.name ?? "unknown";
      this.metrics.model(model).answered(answer.status);
      if (caller) this.options.policy.record({ caller, model, promptTokens: 0, completionTokens: 0, error: true });
    } finally {
      // While closing, a kept-alive connection would hold the server's close open until its idle timeout.
      if (this.#closing.signal.aborted) endConnectionAfter(exchange.response, socket);
      this.#active -= 1;
      if (this.#active === 0) this.#idle?.();
    }
  }

  #finish(caller: GatewayCaller, outcome: Outcome, promptTokens: number, arrivedAt: number): void {
    const modelMetrics = this.metrics.model(outcome.model);
    modelMetrics.answered(outcome.status);
    modelMetrics.latency.observe((performance.now() - arrivedAt) / 1000);
    if (outcome.usage) modelMetrics.countTokens(outcome.usage.promptTokens, outcome.usage.completionTokens);
    this.options.policy.record({
      caller,
      model: outcome.model,
      promptTokens: outcome.usage?.promptTokens ?? promptTokens,
      completionTokens: outcome.usage?.completionTokens ?? 0,
      error: outcome.failed,
    });
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
    counted: { arrivedAt: number; promptTokens: number; maxTokens: number | undefined },
  ): Promise<Outcome> {
    const fallbacks = target.model.fallbacks;
    const stream = endpoint !== "embeddings" && body.stream === true;
    const dropUsageEvent = stream && body.stream_options?.include_usage !== true;
    let loading: RoutingModel | undefined;
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
      if (isFallback && limitProblem(candidate.model, counted.promptTokens, counted.maxTokens, endpoint)) continue;
      const attempt: Attempt = {
        target: candidate,
        body,
        answeringName: candidate.adapter?.name ?? candidate.model.name,
        payload: upstreamBody(exchange.body, body, candidate, dropUsageEvent),
        stream,
        dropUsageEvent,
        arrivedAt: counted.arrivedAt,
        exchange,
        endpoint,
      };
      try {
        if (candidate.model.external) return await this.#external(attempt, candidate.model);
        const served = await this.#replicas(attempt, isFallback);
        if (served === "no-replica") {
          loading ??= candidate.model;
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
    if (loading && !lastFailure) {
      throw new RetryLater(
        "model_loading",
        `model ${loading.name} is loading: no replica became ready within ${Math.round(loading.queue_timeout_ms / 1000)} s${target.model.fallbacks.length > 0 ? ", and no fallback could answer" : ""}`,
        `Retry in ${loadingRetryAfterSeconds} s; \`llmgw ctl replicas --model ${loading.name}\` shows its progress.`,
        loadingRetryAfterSeconds,
      );
    }
    throw new DomainError(
      "upstream_failed",
      `every replica tried for ${target.model.name}${target.model.fallbacks.length > 0 ? " and its fallbacks" : ""} failed before answering (last: ${lastFailure?.upstream ?? "none"}: ${lastFailure?.message ?? "no replica"})`,
      "Retry; if it persists, `llmgw ctl replicas` shows which replicas are failing.",
    );
  }

  /** Serves from the model's replicas, waiting for a first one when it has none; "no-replica" when none came in time. */
  async #replicas(attempt: Attempt, isFallback: boolean): Promise<Outcome | "no-replica"> {
    const model = attempt.target.model;
    let snapshot = this.state.current;
    if (!snapshot.hasReadyReplica(model.name)) {
      this.options.reportDemand(model.name);
      // A fallback is taken only when it can answer now: the request has already waited for the model it asked for.
      if (isFallback) return "no-replica";
      if (this.state.waiting(model.name) >= this.#maxQueue) {
        throw new RetryLater(
          "queue_full",
          `${this.#maxQueue} requests already wait for model ${model.name} to load`,
          "Retry after the Retry-After seconds; the model is starting.",
          loadingRetryAfterSeconds,
        );
      }
      this.metrics.queued.inc({ model: model.name });
      const clientGone = new AbortController();
      const onClose = () => clientGone.abort();
      attempt.exchange.response.once("close", onClose);
      try {
        const ready = await this.state.waitForReady(model.name, model.queue_timeout_ms, AbortSignal.any([clientGone.signal, this.#closing.signal]));
        if (this.#closing.signal.aborted) {
          throw new RetryLater("gateway_shutting_down", "this gateway is shutting down", "Send the request to another gateway, or again in a moment.", 1);
        }
        if (!ready) return "no-replica";
        snapshot = ready;
      } finally {
        this.metrics.queued.dec({ model: model.name });
        attempt.exchange.response.removeListener("close", onClose);
      }
    }
    const replicas = snapshot.model(model.name)?.replicas ?? [];
    const prefixHash = model.routing === "prefix" ? hashText(prefixText(attempt.body, prefixLength)) : undefined;
    const tried = new Set<string>();
    let lastFailure: UpstreamError | undefined;
    const arm = model.canary_weight === undefined ? undefined : chooseArm(model.canary_weight, stickyKeyOf(attempt.body.user, attempt.exchange.headers["x-session-id"]), this.#random);
    for (let count = 0; count < this.#maxAttempts; count += 1) {
      const left = replicas.filter((candidate) => !tried.has(candidate.id));
      const replica = chooseReplica({
        candidates: arm === undefined ? left : sameArmFirst(left, arm),
        inFlight: this.#inFlight,
        prefixHash,
        random: this.#random,
      });
      if (!replica) break;
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
        attempt.exchange.log.warn({ model: model.name, replica: replica.id, status: error.status }, `replica-attempt-failed: ${error.message}`);
      }
    }
    throw lastFailure ?? new UpstreamError(undefined, true, model.name, "no ready replica left to try");
  }

  #countArm(model: string, replica: RoutingReplica, attempt: Attempt, error: boolean): void {
    this.arms.record(model, armOf(replica), performance.now() - attempt.arrivedAt, error, Date.now());
  }

  async #toReplica(attempt: Attempt, replica: RoutingReplica): Promise<Outcome> {
    let route = this.#replicaRoutes.get(replica);
    if (!route) {
      const url = new URL(replica.endpoint);
      route = this.#route(url.origin, `${url.pathname.replace(/\/$/, "")}/v1/`, replica.api_key, `replica ${replica.id}`, undefined);
      this.#replicaRoutes.set(replica, route);
    }
    this.#inFlight.set(replica.id, (this.#inFlight.get(replica.id) ?? 0) + 1);
    try {
      return await this.#forward(attempt, route);
    } finally {
      const left = (this.#inFlight.get(replica.id) ?? 1) - 1;
      if (left <= 0) this.#inFlight.delete(replica.id);
      else this.#inFlight.set(replica.id, left);
    }
  }

  async #external(attempt: Attempt, model: RoutingModel): Promise<Outcome> {
    let route = this.#externalRoutes.get(model);
    if (!route) {
      const external = model.external as NonNullable<RoutingModel["external"]>;
      const base = new URL(external.base_url);
      let key: string | undefined;
      if (external.api_key_env !== null) {
        key = this.options.environment[external.api_key_env];
        if (key === undefined || key === "") {
          // Named by variable, never by value; retryable, so a fallback may still answer.
          throw new UpstreamError(undefined, true, `external ${model.name}`, `the gateway's environment has no ${external.api_key_env} for external model ${model.name}`);
        }
      }
      // A provider's refusal of the key often quotes part of it ("Incorrect API key provided: sk-...abcd"):
      // it is not passed on; the client is told which variable to check. Retryable, so a fallback may answer.
      route = this.#route(base.origin, `${base.pathname.replace(/\/$/, "")}/`, key, `external ${model.name}`, external.api_key_env ?? "(none: api_key_env is not set)");
      this.#externalRoutes.set(model, route);
    }
    return await this.#forward(attempt, route);
  }

  #route(origin: string, basePath: string, key: string | undefined, upstream: string, refusedKeyVariable: string | undefined): UpstreamRoute {
    return {
      pool: this.#pools.get(origin),
      paths: { "chat/completions": `${basePath}chat/completions`, completions: `${basePath}completions`, embeddings: `${basePath}embeddings` },
      authorization: key === undefined ? undefined : `Bearer ${key}`,
      upstream,
      refusedKeyVariable,
    };
  }

  /** Sends the body to one upstream and passes its answer through as it arrives (see ProxiedAnswer for what is retried). */
  async #forward(attempt: Attempt, route: UpstreamRoute): Promise<Outcome> {
    const { exchange } = attempt;
    const headers: Record<string, string> = { "content-type": "application/json", "x-request-id": exchange.id };
    if (route.authorization !== undefined) headers.authorization = route.authorization;
    if (attempt.stream) headers.accept = "text/event-stream";
    this.metrics.addedTime.observe((performance.now() - attempt.arrivedAt) / 1000);
    const modelMetrics = this.metrics.model(attempt.target.model.name);
    modelMetrics.inFlight += 1;
    try {
      const answer = new ProxiedAnswer({
        response: exchange.response,
        requestId: exchange.id,
        answeringName: attempt.answeringName,
        dropUsageEvent: attempt.dropUsageEvent,
        upstream: route.upstream,
        refusedKeyVariable: route.refusedKeyVariable,
        closing: this.#isClosing,
        arrivedAt: attempt.arrivedAt,
        timeToFirstToken: modelMetrics.timeToFirstToken,
        log: exchange.log,
      });
      route.pool.dispatch({ method: "POST", path: route.paths[attempt.endpoint], headers, body: attempt.payload }, answer);
      const outcome = await answer.done;
      return { status: outcome.status, usage: outcome.usage, failed: outcome.failed, model: attempt.answeringName };
    } finally {
      modelMetrics.inFlight -= 1;
    }
  }

  /** Aborted when the gateway starts closing: its front stops reading new requests then. */
  get closingSignal(): AbortSignal {
    return this.#closing.signal;
  }

  /** Stops taking requests: queued ones are answered 503 at once, those being answered finish; then the pools close. */
  async close(): Promise<void> {
    this.#closing.abort();
    if (this.#active > 0) await new Promise<void>((resolve) => (this.#idle = resolve));
    await this.#pools.close();
  }
}

/** OpenAI's and vLLM's default for the legacy completions API. */
const completionsDefaultMaxTokens = 16;

/** The refusal for a request over the model's limits, or undefined when it fits. */
function limitProblem(model: RoutingModel, promptTokens: number, maxTokens: number | undefined, endpoint: GatewayEndpoint): DomainError | undefined {
  if (endpoint !== "embeddings" && maxTokens !== undefined && model.max_output !== null && maxTokens > model.max_output) {
    return new DomainError(
      "context_length_exceeded",
      `max_tokens ${maxTokens} is over model ${model.name}'s max_output of ${model.max_output} tokens`,
      `Ask for at most ${model.max_output} tokens.`,
    );
  }
  if (model.context !== null && promptTokens + (maxTokens ?? 0) > model.context) {
    return new DomainError(
      "context_length_exceeded",
      `this request needs ${promptTokens + (maxTokens ?? 0)} tokens (${promptTokens} in the prompt, ${maxTokens ?? 0} for the answer), over model ${model.name}'s context of ${model.context}`,
      "Shorten the prompt or lower max_tokens.",
    );
  }
  return undefined;
}

/**
 * The bytes the upstream gets: the client's own, unless the name must change
 * (an alias, a fallback, an external model's provider name, an adapter the
 * engine selects its own way) or usage must be asked for on a stream.
 */
function upstreamBody(raw: Buffer, body: GatewayBody, target: RoutingTarget, askUsage: boolean): Buffer {
  const { model, adapter } = target;
  let name = model.external?.model ?? model.name;
  let lora: { id: number; scale: number }[] | undefined;
  if (adapter) {
    if (model.engine === "llamacpp") {
      // llama-server serves one name and selects adapters by number in each request; the others at scale 0.
      lora = model.adapters.map((candidate) => ({ id: candidate.index, scale: candidate.name === adapter.name ? (candidate.scale ?? 1) : 0 }));
    } else {
      name = adapter.name;
    }
  }
  if (name === body.model && !askUsage && lora === undefined) return raw;
  if (name === body.model && lora === undefined && (body.stream_options === undefined || body.stream_options === null)) {
    // Only usage to ask for: the client's bytes with one field put first, instead of the whole body serialised again.
    const opening = raw.indexOf(0x7b);
    if (opening >= 0 && raw.subarray(0, opening).every(isJsonSpace)) return Buffer.concat([askUsageOpening, raw.subarray(opening + 1)]);
  }
  // The parsed body keeps every field the client sent (the schema is loose), so it is not parsed again.
  const json: Record<string, unknown> = { ...body, model: name };
  if (askUsage) json.stream_options = { ...(body.stream_options ?? {}), include_usage: true };
  if (lora !== undefined) json.lora = lora;
  return Buffer.from(JSON.stringify(json));
}

const askUsageOpening = Buffer.from('{"stream_options":{"include_usage":true},');

function isJsonSpace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

function endConnectionAfter(response: V1Response, socket: Socket | null): void {
  const end = () => socket?.end();
  if (response.writableFinished) end();
  else response.once("finish", end);
}
