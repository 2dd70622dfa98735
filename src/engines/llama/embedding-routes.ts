import type { FastifyInstance } from "fastify";
import type { LlamaEmbeddingContext, Token } from "node-llama-cpp";
import { postWithBody } from "../openai-server/body-route.js";
import { encodedEmbedding } from "../openai-server/embedding-encoding.js";
import { errorBody } from "../openai-server/openai-error-body.js";
import { embeddingRequestSchema } from "../openai-server/openai-request-schemas.js";
import { withTurn, type RouteContext } from "./engine-state.js";
import { llamaBodyRefusal, RequestFailed, sendFailure } from "./request-failed.js";

/** /v1/embeddings, served when the engine was started with --embedding (501 otherwise, as llama-server answers). */
export function registerEmbeddingRoutes(server: FastifyInstance, route: RouteContext): void {
  const { args, metrics } = route;
  postWithBody(server, "/v1/embeddings", embeddingRequestSchema, llamaBodyRefusal, async (body, request, reply) => {
    if (!args.embedding) return reply.code(501).send(errorBody(501, "not_supported_error", "This server does not support embeddings. Start it with `--embeddings`"));
    const input = body.input;
    const items: (string | Token[])[] = typeof input === "string" ? [input] : (input as (string | number | number[])[]).every((item) => typeof item === "number") ? [input as Token[]] : (input as (string | Token[])[]);
    try {
      const result = await withTurn(route, request, async (state) => {
        const context = state.embeddings as LlamaEmbeddingContext;
        let promptTokens = 0;
        const data = [];
        for (const [index, item] of items.entries()) {
          const tokens = typeof item === "string" ? state.model.tokenize(item, true) : item;
          if (tokens.length > state.slotContext) throw new RequestFailed(400, "invalid_request_error", `input ${index} is ${tokens.length} tokens, over the ${state.slotContext} of a slot`);
          promptTokens += tokens.length;
          const started = performance.now();
          const vector = normalized((await context.getEmbeddingFor(tokens)).vector);
          metrics.record({ tokens: tokens.length, seconds: (performance.now() - started) / 1000 }, { tokens: 0, seconds: 0 });
          data.push({ object: "embedding", index, embedding: encodedEmbedding(vector, body.encoding_format) });
        }
        return { object: "list", model: route.modelName, data, usage: { prompt_tokens: promptTokens, total_tokens: promptTokens } };
      });
      route.log(`POST /v1/embeddings inputs=${items.length} prompt_tokens=${result.usage.prompt_tokens}`);
      return result;
    } catch (error) {
      return sendFailure(reply, error);
    }
  });
}

function normalized(vector: readonly number[]): number[] {
  const norm = Math.sqrt(vector.reduce((sum, value) => sum + value * value, 0));
  return norm > 0 ? vector.map((value) => value / norm) : [...vector];
}
