import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { LlamaModel } from "node-llama-cpp";
import { errorBody } from "../openai-server/openai-error-body.js";
import { kvCacheUsage, type RouteContext } from "./engine-state.js";

/** The paths llama-server leaves open with an API key: health, which the agent polls, and metrics, which it reads. */
const openPaths = new Set(["/health", "/v1/health", "/metrics"]);

export function llamaOpenPath(path: string): boolean {
  return openPaths.has(path);
}

/** /health (503 while the model loads, 500 if it failed), /metrics under llama-server's names, and the model list at /v1/models and /models. */
export function registerControlRoutes(server: FastifyInstance, route: RouteContext): void {
  const { metrics, gate } = route;
  const health = async (_request: FastifyRequest, reply: FastifyReply) => {
    if (route.loadError() !== undefined) return reply.code(500).send(errorBody(500, "server_error", `Model failed to load: ${route.loadError()}`));
    if (route.state() === undefined) return reply.code(503).send(errorBody(503, "unavailable_error", "Loading model"));
    return { status: "ok" };
  };
  server.get("/health", health);
  server.get("/v1/health", health);

  server.get("/metrics", async (_request, reply) => {
    metrics.processing.set(gate.running);
    metrics.deferred.set(gate.waiting);
    const kv = await kvCacheUsage(route.state());
    metrics.kvCacheUsage.set(kv.ratio);
    metrics.kvCacheTokens.set(kv.used);
    return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });

  const models = async () => {
    const state = route.state();
    return {
      object: "list",
      data: [
        {
          id: route.modelName,
          object: "model",
          created: Math.floor(Date.now() / 1000),
          owned_by: "llamacpp",
          meta:
            state === undefined
              ? null
              : { n_ctx_train: state.model.trainContextSize, n_embd: state.model.embeddingVectorSize, n_vocab: vocabularySize(state.model), size: state.model.size },
        },
      ],
    };
  };
  server.get("/v1/models", models);
  server.get("/models", models);
}

function vocabularySize(model: LlamaModel): number | null {
  const tokens = (model.fileInfo.metadata.tokenizer as { ggml?: { tokens?: readonly unknown[] } } | undefined)?.ggml?.tokens;
  return Array.isArray(tokens) ? tokens.length : null;
}
