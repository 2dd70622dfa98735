import { didYouMean, DomainError } from "../../errors/index.js";
import { modelUnavailable } from "../wire/model-unavailable.js";
import { type RoutingModel, type RoutingReplica, engineServes, enginesServing, extraRoutes, type ExtraRoute } from "../../protocol/index.js";
import type { GatewayEndpoint } from "../wire/gateway-exchange.js";
import type { GatewayBody } from "../wire/prompt-text.js";
import type { LimitFields } from "./request-limits.js";
import type { RoutingSnapshot } from "../routing/routing-snapshot.js";
import type { UpstreamError } from "../wire/upstream-error.js";
import { RetryLater } from "../wire/retry-later.js";
import { loadingRetryAfterSeconds } from "./wait-for-replica.js";

export function isExtraRoute(endpoint: GatewayEndpoint): endpoint is ExtraRoute {
  return (extraRoutes as readonly string[]).includes(endpoint);
}

/** About four characters a token: the estimate for routes whose prompt the model's tokenizer is not asked to count. */
export function approximateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/** The fields a limit refusal names, as each route calls them. */
export function limitFields(endpoint: GatewayEndpoint, body: GatewayBody): LimitFields {
  if (endpoint === "responses") return { maxTokens: "max_output_tokens", prompt: "input" };
  if (endpoint === "messages") return { maxTokens: "max_tokens", prompt: "messages" };
  const maxTokens = body.max_completion_tokens !== undefined && body.max_completion_tokens !== null ? "max_completion_tokens" : "max_tokens";
  return { maxTokens, prompt: endpoint === "chat/completions" ? "messages" : endpoint === "completions" ? "prompt" : "input" };
}

/** The routes that ask a model to write text, which an engine started to pool cannot answer. */
export function generates(endpoint: GatewayEndpoint): boolean {
  return endpoint === "chat/completions" || endpoint === "completions" || endpoint === "responses" || endpoint === "messages";
}

/**
 * A chat, completions or Responses request to a model whose engine pools
 * (an embedding model, a reranker) is refused here, naming the routes it
 * serves: vLLM would answer "does not support Chat Completions API" and
 * llama-server 501, neither saying where to go instead.
 */
export function refuseGenerationFromPoolingModel(model: RoutingModel, endpoint: GatewayEndpoint): void {
  if (model.pooling === undefined || !generates(endpoint)) return;
  const routes = model.pooling.routes.map((route) => `/v1/${route}`);
  const served = routes.length === 1 ? (routes[0] as string) : `${routes.slice(0, -1).join(", ")} or ${routes.at(-1) as string}`;
  throw new DomainError(
    "wrong_model_task",
    `model ${model.name} pools rather than generates (its engine runs with ${model.pooling.flag}): it serves ${served}, not POST /v1/${endpoint}`,
    `Send it ${served} requests, or ask for a chat model (GET /v1/models lists them).`,
    [{ where: "model", message: `${model.name} runs with ${model.pooling.flag} and writes no text` }],
  );
}

/**
 * A route the model's engine does not serve is refused here, naming the
 * engines that do: the engine would answer a bare 404 in its own shape.
 * External models are the provider's to judge.
 */
export function refuseUnservedRoute(model: RoutingModel, route: ExtraRoute): void {
  if (model.engine === null || engineServes(model.engine, route)) return;
  throw new DomainError(
    "wrong_model_task",
    `model ${model.name} runs on ${model.engine}, which does not serve POST /v1/${route}`,
    `POST /v1/${route} is served by models on ${enginesServing(route).join(", ")}; send this model's requests to /v1/chat/completions${route === "responses" ? " (the same conversation, as messages)" : ""}, or use a model on one of those engines.`,
    [{ where: "model", message: `${model.engine} does not serve /v1/${route}` }],
  );
}

/**
 * Whether a fallback can take a request on this route as the client sent it:
 * its engine serves the route, and for Anthropic's Messages every replica it
 * has now serves it itself (a built-in llama.cpp replica does not).
 */
export function fallbackServes(model: RoutingModel, endpoint: GatewayEndpoint): boolean {
  if (!isExtraRoute(endpoint) || model.engine === null) return true;
  if (!engineServes(model.engine, endpoint)) return false;
  return endpoint !== "messages" || model.replicas.every((replica) => replica.serves_messages === true);
}

/** The replicas that can answer this route: for Anthropic's Messages passed through, only those whose engine serves it. */
export function replicasServing(replicas: readonly RoutingReplica[], endpoint: GatewayEndpoint): readonly RoutingReplica[] {
  return endpoint === "messages" ? replicas.filter((replica) => replica.serves_messages === true) : replicas;
}

/**
 * Why no model (the one asked for, then its fallbacks) answered: still
 * loading (503 with Retry-After), unavailable by placement's word, or every
 * replica tried failed before its first byte.
 */
export function unansweredError(
  asked: RoutingModel,
  snapshot: RoutingSnapshot,
  why: { loading: RoutingModel | undefined; unavailable: RoutingModel | undefined; lastFailure: UpstreamError | undefined },
): Error {
  const { loading, unavailable, lastFailure } = why;
  if (loading && !lastFailure) {
    // The estimate as the table has it now, after the wait: the replica's progress moved on meanwhile.
    const eta = snapshot.model(loading.name)?.loading_eta_s ?? undefined;
    const retryAfter = eta ?? loadingRetryAfterSeconds;
    return new RetryLater(
      "model_loading",
      `model ${loading.name} is loading: no replica became ready within ${Math.round(loading.queue_timeout_ms / 1000)} s${eta !== undefined ? `; its replica should be ready in about ${eta} s` : ""}${asked.fallbacks.length > 0 ? ", and no fallback could answer" : ""}`,
      `Retry in ${retryAfter} s; \`llmgw ctl replicas --model ${loading.name}\` shows its progress.`,
      retryAfter,
    );
  }
  if (unavailable && !lastFailure) return modelUnavailable(unavailable.name, unavailable.unavailable ?? "", asked.fallbacks.length > 0);
  return new DomainError(
    "upstream_failed",
    `every replica tried for ${asked.name}${asked.fallbacks.length > 0 ? " and its fallbacks" : ""} failed before answering (last: ${lastFailure?.upstream ?? "none"}: ${lastFailure?.message ?? "no replica"})`,
    "Retry; if it persists, `llmgw ctl replicas` shows which replicas are failing.",
  );
}

/** model_not_found, suggesting the nearest of `mayUse`: only names the caller may use, so a typo reveals no model its key cannot see. */
export function modelNotFound(name: string, mayUse: readonly string[] = []): DomainError {
  return new DomainError("model_not_found", `no model named ${name} at this gateway${didYouMean(name, mayUse)}`, "GET /v1/models lists the models, aliases and adapters you may use.");
}
