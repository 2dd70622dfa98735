import type { FastifyInstance, FastifyReply } from "fastify";
import type { EngineName } from "../../catalog/schema.js";
import { engineServes } from "../../protocol/engine-routes.js";
import { postWithBody } from "../openai-server/body-route.js";
import type { ConcurrencyGate } from "../openai-server/concurrency-gate.js";
import { encodedEmbedding } from "../openai-server/embedding-encoding.js";
import { embeddingRequestSchema, rerankRequestSchema, scoreRequestSchema } from "../openai-server/openai-request-schemas.js";
import { errorBody } from "../openai-server/openai-error-body.js";
import { simBodyRefusal } from "./sim-dialect.js";
import { sleep } from "./sim-clock.js";
import type { SimLoad } from "./sim-decode.js";
import type { SimFaultState } from "./sim-fault-state.js";
import type { SimMetrics } from "./sim-metrics.js";
import { simulatedRelevance } from "./sim-relevance.js";
import { approximateTokenCount, simulatedEmbedding } from "./sim-text.js";
import { timeToFirstTokenMilliseconds, type SimTiming } from "./sim-timing.js";

/** Embedding width when the request does not ask: that of the small sentence-transformers models. */
const defaultEmbeddingDimensions = 384;

/** What the prefill-only routes need of the engine that serves them. */
export interface PrefillHost {
  readonly engine: EngineName;
  readonly gate: ConcurrencyGate;
  readonly timing: SimTiming;
  readonly metrics: SimMetrics;
  /** The requests served so far: a reranking's id is its number. */
  readonly load: SimLoad;
  readonly fault: SimFaultState;
  admit(reply: FastifyReply, model: string): Promise<boolean>;
  log(line: string): void;
}

/** The routes that only read their input, as prefill does: embeddings, rerank and score. */
export function registerPrefillRoutes(server: FastifyInstance, host: PrefillHost): void {
  // A reranker reads each query and document pair once, as an embedding model reads its input: prefill only.
  const scored = async (reply: FastifyReply, route: string, model: string, pairs: readonly (readonly [string, string])[], answer: (scores: number[], promptTokens: number) => unknown) => {
    if (!(await host.admit(reply, model))) return reply;
    const promptTokens = pairs.reduce((total, [query, document]) => total + approximateTokenCount(query) + approximateTokenCount(document), 0);
    const release = await host.gate.acquire();
    try {
      await sleep(timeToFirstTokenMilliseconds(host.timing, promptTokens));
      host.metrics.recordPromptTokens(promptTokens);
      host.load.requests += 1;
      host.log(`POST ${route} model=${model} pairs=${pairs.length} prompt_tokens=${promptTokens}`);
      await reply.send(answer(pairs.map(([query, document]) => simulatedRelevance(query, document)), promptTokens));
    } finally {
      release();
    }
    host.fault.countTowardCrash(reply.raw);
    return reply;
  };

  if (engineServes(host.engine, "rerank")) {
    postWithBody(server, "/v1/rerank", rerankRequestSchema, simBodyRefusal, async (body, _request, reply) => {
      const { query, model } = body;
      const documents = body.documents.map((document) => (typeof document === "string" ? document : document.text));
      const topN = body.top_n ?? 0;
      return scored(reply, "/v1/rerank", model, documents.map((document) => [query, document] as const), (scores, promptTokens) => {
        const ranked = scores.map((score, index) => ({ index, score })).sort((a, b) => b.score - a.score).slice(0, topN > 0 ? topN : undefined);
        // Each engine answers in its own shape: SGLang a bare list, llama-server without the documents' text unless asked, vLLM with them.
        if (host.engine === "sglang") return ranked.map(({ index, score }) => ({ score, document: documents[index], index, meta_info: null }));
        if (host.engine === "llamacpp") return { model, object: "list", usage: { prompt_tokens: promptTokens, total_tokens: promptTokens }, results: ranked.map(({ index, score }) => ({ index, relevance_score: score })) };
        return { id: `rerank-sim-${host.load.requests}`, model, usage: { total_tokens: promptTokens }, results: ranked.map(({ index, score }) => ({ index, document: { text: documents[index] }, relevance_score: score })) };
      });
    });
  }

  if (engineServes(host.engine, "score")) {
    postWithBody(server, "/v1/score", scoreRequestSchema, simBodyRefusal, async (body, _request, reply) => {
      const first = typeof body.text_1 === "string" ? [body.text_1] : body.text_1;
      const second = typeof body.text_2 === "string" ? [body.text_2] : body.text_2;
      if (first.length > 1 && first.length !== second.length) {
        return reply.code(400).send(errorBody(400, "BadRequestError", `text_1 has ${first.length} texts and text_2 ${second.length}: give one text_1, or as many as text_2`, "text_2"));
      }
      const pairs = second.map((text, index) => [first.length === 1 ? (first[0] as string) : (first[index] as string), text] as const);
      const { model } = body;
      return scored(reply, "/v1/score", model, pairs, (scores, promptTokens) => ({
        id: `score-sim-${host.load.requests}`,
        object: "list",
        created: Math.floor(Date.now() / 1000),
        model,
        data: scores.map((score, index) => ({ index, object: "score", score })),
        usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
      }));
    });
  }

  postWithBody(server, "/v1/embeddings", embeddingRequestSchema, simBodyRefusal, async (body, _request, reply) => {
    if (!(await host.admit(reply, body.model))) return reply;
    const input = body.input;
    const texts: string[] =
      typeof input === "string"
        ? [input]
        : input.every((item) => typeof item === "string")
          ? (input as string[])
          : input.every((item) => typeof item === "number")
            ? [(input as number[]).join(" ")]
            : (input as number[][]).map((tokens) => tokens.join(" "));
    const dimensions = body.dimensions ?? defaultEmbeddingDimensions;
    const promptTokens = texts.reduce((total, text) => total + approximateTokenCount(text), 0);
    const release = await host.gate.acquire();
    try {
      await sleep(timeToFirstTokenMilliseconds(host.timing, promptTokens));
      host.metrics.recordPromptTokens(promptTokens);
      const data = texts.map((text, index) => {
        const vector = simulatedEmbedding(text, dimensions);
        return { object: "embedding", index, embedding: encodedEmbedding(vector, body.encoding_format) };
      });
      host.log(`POST /v1/embeddings model=${body.model} inputs=${texts.length} prompt_tokens=${promptTokens}`);
      await reply.send({ object: "list", data, model: body.model, usage: { prompt_tokens: promptTokens, total_tokens: promptTokens } });
    } finally {
      release();
    }
    host.fault.countTowardCrash(reply.raw);
    return reply;
  });
}
