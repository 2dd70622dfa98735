import { createHash, timingSafeEqual } from "node:crypto";
import { Template } from "@huggingface/jinja";
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import type { LlamaContext, LlamaContextSequence, LlamaEmbeddingContext, LlamaModel, Token } from "node-llama-cpp";
import { describeIssues } from "../../catalog/schema-errors.js";
import { ConcurrencyGate } from "../sim/concurrency-gate.js";
import { chatCompletionRequestSchema, completionRequestSchema, embeddingRequestSchema } from "../sim/openai-request-schemas.js";
import { embeddingToBase64 } from "../sim/sim-text.js";
import { LlamaMetrics } from "./llama-metrics.js";
import { engineUsesCards } from "./llama-build.js";
import { loadLlama, type LoadedLlama } from "./llama-runtime.js";
import { parseLlamaServerArguments, type LlamaServerArguments } from "./llama-server-arguments.js";
import { samplingSchema, type Sampling } from "./sampling.js";
import { StopMatcher } from "./stop-matcher.js";

export interface LlamaEngineOptions {
  /** llama-server's argv, without argv[0]. */
  readonly argv: readonly string[];
  readonly environment: Readonly<Record<string, string | undefined>>;
  readonly log?: (line: string) => void;
}

export interface LlamaEngineHandle {
  readonly url: string;
  readonly port: number;
  /** Settles when the model is loaded (or failed to load). */
  readonly loaded: Promise<void>;
  close(): Promise<void>;
}

/** Thrown while a request is being served; answered in llama-server's (and OpenAI's) error shape. */
class RequestFailed extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

function errorBody(status: number, type: string, message: string) {
  return { error: { code: status, message, type } };
}

/** One llama.cpp context for one choice of adapter and scale, with a sequence per slot. */
interface SlotContext {
  readonly context: LlamaContext;
  readonly free: LlamaContextSequence[];
}

interface Loaded {
  readonly runtime: LoadedLlama;
  readonly model: LlamaModel;
  readonly template: Template | undefined;
  readonly slotContext: number;
  readonly embeddings: LlamaEmbeddingContext | undefined;
  /** Keyed by the adapter scales, comma-separated ("" for the base model). */
  readonly contexts: Map<string, Promise<SlotContext>>;
}

interface Generation {
  readonly text: string;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly finishReason: "stop" | "length";
  readonly promptMs: number;
  readonly predictedMs: number;
}

/**
 * llmgw's built-in llama.cpp engine: llama-server's HTTP API, in
 * llama-server's shapes, served by llama.cpp through node-llama-cpp. It takes
 * llama-server's command line (the llamacpp driver builds one argv for both)
 * and serves what the agent and the gateway use: /health (503 while the model
 * loads), /metrics under llama-server's names, /v1/models,
 * /v1/chat/completions with the model's own chat template from the GGUF,
 * /v1/completions and /v1/embeddings (with --embedding), streaming with usage.
 *
 * --parallel slots serve at once; further requests wait in a bounded queue
 * (503 past it). --ctx-size is the KV cache of all slots together, so each
 * slot holds ctx-size / parallel tokens, as in llama-server.
 */
export async function startLlamaEngine(options: LlamaEngineOptions): Promise<LlamaEngineHandle> {
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const args = parseLlamaServerArguments(options.argv, options.environment);
  const modelName = args.alias ?? args.model;
  const metrics = new LlamaMetrics();
  const gate = new ConcurrencyGate(args.parallel);
  let loaded: Loaded | undefined;
  let loadError: string | undefined;

  const server = Fastify({ logger: false, bodyLimit: 64 * 1024 * 1024 });
  registerRoutes(server, {
    args,
    modelName,
    metrics,
    gate,
    state: () => loaded,
    loadError: () => loadError,
    log,
  });
  await server.listen({ host: args.host, port: args.port });
  const address = server.server.address();
  const port = typeof address === "object" && address !== null ? address.port : args.port;
  log(`llmgw llama-engine: loading "${modelName}" from ${args.model}, listening on ${args.host}:${port}`);

  const loading = load(args, log).then(
    (value) => {
      loaded = value;
      log(`llmgw llama-engine: serving "${modelName}" with ${args.parallel} slot(s) of ${value.slotContext} tokens${args.embedding ? " (embeddings)" : ""}`);
    },
    (error: unknown) => {
      loadError = error instanceof Error ? error.message : String(error);
      log(`llmgw llama-engine: cannot load ${args.model}: ${loadError}`);
      throw error;
    },
  );
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    loaded: loading,
    async close() {
      await server.close();
      await loaded?.runtime.llama.dispose();
    },
  };
}

async function load(args: LlamaServerArguments, log: (line: string) => void): Promise<Loaded> {
  const visibleDevices = process.env.CUDA_VISIBLE_DEVICES;
  const useCards = engineUsesCards(args.gpuLayers, visibleDevices);
  const runtime = await loadLlama({ useCards, visibleDevices, log });
  log(`llmgw llama-engine: ${runtime.description}`);
  const model = await runtime.llama.loadModel({ modelPath: args.model, gpuLayers: useCards ? "max" : 0 });
  const templateText = model.fileInfo.metadata.tokenizer?.chat_template;
  checkPooling(model, args, log);
  const slotContext = Math.max(64, Math.floor((args.contextSize ?? model.trainContextSize * args.parallel) / args.parallel));
  const threads = args.threads ?? 0;
  const embeddings = args.embedding ? await model.createEmbeddingContext({ contextSize: slotContext, threads }) : undefined;
  const contexts = new Map<string, Promise<SlotContext>>();
  const state: Loaded = { runtime, model, template: templateText ? new Template(templateText) : undefined, slotContext, embeddings, contexts };
  // The base model's context is made now, so the first request does not wait for it and a failure shows at load.
  if (!args.embedding) await slotContextFor(state, args, args.adapters.map((adapter) => adapter.scale));
  return state;
}

const poolingNames = ["none", "mean", "cls", "last", "rank"] as const;

/**
 * llama.cpp pools embeddings as the GGUF's {arch}.pooling_type says, and
 * node-llama-cpp offers no override: a --pooling that agrees is fine, one that
 * differs would give other vectors than llama-server, so the load fails.
 */
function checkPooling(model: LlamaModel, args: LlamaServerArguments, log: (line: string) => void): void {
  if (args.pooling === undefined) return;
  const metadata = model.fileInfo.metadata as unknown as Record<string, Record<string, unknown> | undefined>;
  const architecture = model.fileInfo.metadata.general.architecture as string;
  const stored = metadata[architecture]?.pooling_type;
  const own = typeof stored === "number" ? poolingNames[stored] : undefined;
  if (own === undefined) {
    log(`llmgw llama-engine: ${args.model} names no pooling type; --pooling ${args.pooling} is left to llama.cpp's default for ${architecture}`);
    return;
  }
  if (own !== args.pooling) {
    throw new Error(`--pooling ${args.pooling} differs from the GGUF's own pooling (${own}), and the built-in engine pools as the GGUF says; drop --pooling or install llama-server`);
  }
}

function slotContextFor(state: Loaded, args: LlamaServerArguments, scales: readonly number[]): Promise<SlotContext> {
  const key = scales.join(",");
  let found = state.contexts.get(key);
  if (found === undefined) {
    const adapters = args.adapters.flatMap((adapter, index) => ((scales[index] ?? 0) !== 0 ? [{ filePath: adapter.path, scale: scales[index] ?? 0 }] : []));
    found = state.model
      .createContext({
        contextSize: state.slotContext,
        sequences: args.parallel,
        ...(args.threads !== undefined ? { threads: args.threads } : {}),
        ...(adapters.length > 0 ? { lora: { adapters } } : {}),
      })
      .then((context) => ({ context, free: Array.from({ length: args.parallel }, () => context.getSequence()) }));
    state.contexts.set(key, found);
    found.catch(() => state.contexts.delete(key));
  }
  return found;
}

interface RouteContext {
  readonly args: LlamaServerArguments;
  readonly modelName: string;
  readonly metrics: LlamaMetrics;
  readonly gate: ConcurrencyGate;
  readonly state: () => Loaded | undefined;
  readonly loadError: () => string | undefined;
  readonly log: (line: string) => void;
}

function keyMatches(header: string | undefined, key: string): boolean {
  const given = /^Bearer\s+(.+)$/i.exec(header ?? "")?.[1]?.trim() ?? "";
  const digest = (text: string) => createHash("sha256").update(text).digest();
  return timingSafeEqual(digest(given), digest(key));
}

function registerRoutes(server: FastifyInstance, route: RouteContext): void {
  const { args, metrics, gate } = route;
  const openPaths = new Set(["/health", "/v1/health", "/metrics"]);
  server.addHook("onRequest", async (request, reply) => {
    const path = request.url.split("?")[0] ?? "";
    if (args.apiKey !== undefined && !openPaths.has(path) && !keyMatches(request.headers.authorization, args.apiKey)) {
      return reply.code(401).send(errorBody(401, "authentication_error", "Invalid API Key"));
    }
    return undefined;
  });
  server.setErrorHandler((error: { statusCode?: number; message?: string }, _request, reply) => {
    const status = error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 600 ? error.statusCode : 500;
    void reply.code(status).send(errorBody(status, status < 500 ? "invalid_request_error" : "server_error", error.message ?? "internal error"));
  });

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

  /** Waits for a slot (503 past the queue's bound), runs `work`, frees the slot. */
  const withSlot = async <T>(request: FastifyRequest, work: (state: Loaded, signal: AbortSignal) => Promise<T>): Promise<T> => {
    const state = route.state();
    if (state === undefined) throw new RequestFailed(503, "unavailable_error", "Loading model");
    if (gate.running >= gate.limit && gate.waiting >= args.queueLimit) {
      throw new RequestFailed(503, "unavailable_error", `all ${gate.limit} slots are busy and ${gate.waiting} requests wait; try again shortly`);
    }
    const abort = new AbortController();
    const onClose = () => {
      if (!request.raw.complete || !request.raw.socket.writable) abort.abort();
    };
    request.raw.socket.once("close", onClose);
    const release = await gate.acquire(abort.signal).catch(() => {
      throw new RequestFailed(499, "cancelled", "client went away while waiting for a slot");
    });
    try {
      return await work(state, abort.signal);
    } finally {
      release();
      request.raw.socket.off("close", onClose);
    }
  };

  /** The loaded model, or undefined once the answer that it cannot generate (embeddings only, still loading) is sent. */
  const readyToGenerate = (reply: FastifyReply): Loaded | undefined => {
    if (args.embedding) {
      void reply.code(501).send(errorBody(501, "not_supported_error", "This server serves embeddings only (started with --embedding)"));
      return undefined;
    }
    const state = route.state();
    if (state === undefined) void reply.code(503).send(errorBody(503, "unavailable_error", "Loading model"));
    return state;
  };

  server.post("/v1/chat/completions", async (request, reply) => {
    const body = chatCompletionRequestSchema.safeParse(request.body);
    if (!body.success) return reply.code(400).send(errorBody(400, "invalid_request_error", describeIssues(body.error.issues, "request body")));
    const state = readyToGenerate(reply);
    if (state === undefined) return reply;
    const sampling = readSampling(request.body);
    if (state.template === undefined) return reply.code(500).send(errorBody(500, "server_error", `${args.model} has no chat template (tokenizer.chat_template); use /v1/completions`));
    const messages = body.data.messages.map((message) => ({
      role: message.role,
      content: typeof message.content === "string" ? message.content : (message.content ?? []).map((part) => part.text ?? "").join(""),
    }));
    const prompt = state.template.render({
      messages,
      add_generation_prompt: true,
      bos_token: tokenText(state.model, state.model.tokens.bos),
      eos_token: tokenText(state.model, state.model.tokens.eos),
    });
    const promptTokens = state.model.tokenize(prompt, true);
    return serveGeneration(request, reply, "chat", promptTokens, body.data.max_completion_tokens ?? body.data.max_tokens ?? undefined, body.data.stream ?? false, body.data.stream_options?.include_usage ?? false, sampling, body.data.lora ?? undefined);
  });

  server.post("/v1/completions", async (request, reply) => {
    const body = completionRequestSchema.safeParse(request.body);
    if (!body.success) return reply.code(400).send(errorBody(400, "invalid_request_error", describeIssues(body.error.issues, "request body")));
    const state = readyToGenerate(reply);
    if (state === undefined) return reply;
    const sampling = readSampling(request.body);
    const prompt = body.data.prompt;
    const first = Array.isArray(prompt) ? prompt[0] : prompt;
    const promptTokens = typeof first === "string" ? state.model.tokenize(first, true) : Array.isArray(first) ? (first as Token[]) : (prompt as Token[]);
    return serveGeneration(request, reply, "text", promptTokens, body.data.max_tokens ?? undefined, body.data.stream ?? false, body.data.stream_options?.include_usage ?? false, sampling, body.data.lora ?? undefined);
  });

  server.post("/v1/embeddings", async (request, reply) => {
    const body = embeddingRequestSchema.safeParse(request.body);
    if (!body.success) return reply.code(400).send(errorBody(400, "invalid_request_error", describeIssues(body.error.issues, "request body")));
    if (!args.embedding) return reply.code(501).send(errorBody(501, "not_supported_error", "This server does not support embeddings. Start it with `--embeddings`"));
    const input = body.data.input;
    const items: (string | Token[])[] = typeof input === "string" ? [input] : (input as (string | number | number[])[]).every((item) => typeof item === "number") ? [input as Token[]] : (input as (string | Token[])[]);
    try {
      const result = await withSlot(request, async (state) => {
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
          data.push({ object: "embedding", index, embedding: body.data.encoding_format === "base64" ? embeddingToBase64(vector) : vector });
        }
        return { object: "list", model: route.modelName, data, usage: { prompt_tokens: promptTokens, total_tokens: promptTokens } };
      });
      route.log(`POST /v1/embeddings inputs=${items.length} prompt_tokens=${result.usage.prompt_tokens}`);
      return result;
    } catch (error) {
      return sendFailure(reply, error);
    }
  });

  async function serveGeneration(
    request: FastifyRequest,
    reply: FastifyReply,
    kind: "chat" | "text",
    promptTokens: readonly Token[],
    maxTokens: number | undefined,
    stream: boolean,
    includeUsage: boolean,
    sampling: Sampling,
    lora: readonly { id: number; scale: number }[] | undefined,
  ): Promise<FastifyReply | undefined> {
    const id = `${kind === "chat" ? "chatcmpl" : "cmpl"}-${createHash("sha256").update(`${Date.now()}${Math.random()}`).digest("hex").slice(0, 24)}`;
    const created = Math.floor(Date.now() / 1000);
    const scales = args.adapters.map((adapter, index) => lora?.find((entry) => entry.id === index)?.scale ?? adapter.scale);
    const unknownAdapter = lora?.find((entry) => entry.id < 0 || entry.id >= args.adapters.length);
    if (unknownAdapter !== undefined) return reply.code(400).send(errorBody(400, "invalid_request_error", `lora id ${unknownAdapter.id} is not one of the ${args.adapters.length} adapters this server loaded`));
    const chunk = (delta: Record<string, unknown>, finishReason: string | null) =>
      kind === "chat"
        ? { id, object: "chat.completion.chunk", created, model: route.modelName, choices: [{ index: 0, delta, finish_reason: finishReason }] }
        : { id, object: "text_completion", created, model: route.modelName, choices: [{ index: 0, text: delta.content ?? "", logprobs: null, finish_reason: finishReason }] };
    let started = false;
    const send = (payload: unknown) => reply.raw.write(`data: ${JSON.stringify(payload)}\n\n`);
    try {
      const generation = await withSlot(request, (state, signal) =>
        generate(state, args, metrics, promptTokens, maxTokens, sampling, scales, signal, (text) => {
          if (!stream) return;
          if (!started) {
            started = true;
            reply.hijack();
            reply.raw.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
            if (kind === "chat") send(chunk({ role: "assistant", content: null }, null));
          }
          if (text !== "") send(chunk({ content: text }, null));
        }),
      );
      const usage = { prompt_tokens: generation.promptTokens, completion_tokens: generation.completionTokens, total_tokens: generation.promptTokens + generation.completionTokens };
      const timings = {
        prompt_n: generation.promptTokens,
        prompt_ms: generation.promptMs,
        predicted_n: generation.completionTokens,
        predicted_ms: generation.predictedMs,
        prompt_per_second: generation.promptMs > 0 ? (generation.promptTokens * 1000) / generation.promptMs : null,
        predicted_per_second: generation.predictedMs > 0 ? (generation.completionTokens * 1000) / generation.predictedMs : null,
      };
      route.log(`POST /v1/${kind === "chat" ? "chat/completions" : "completions"} prompt_tokens=${usage.prompt_tokens} completion_tokens=${usage.completion_tokens} finish=${generation.finishReason}`);
      if (!stream) {
        const choice =
          kind === "chat"
            ? { index: 0, message: { role: "assistant", content: generation.text }, finish_reason: generation.finishReason }
            : { index: 0, text: generation.text, logprobs: null, finish_reason: generation.finishReason };
        return reply.send({ id, object: kind === "chat" ? "chat.completion" : "text_completion", created, model: route.modelName, choices: [choice], usage, timings });
      }
      if (!started) {
        reply.hijack();
        reply.raw.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
        if (kind === "chat") send(chunk({ role: "assistant", content: null }, null));
      }
      send({ ...chunk({}, generation.finishReason), timings });
      if (includeUsage) send({ id, object: kind === "chat" ? "chat.completion.chunk" : "text_completion", created, model: route.modelName, choices: [], usage });
      reply.raw.end("data: [DONE]\n\n");
      return reply;
    } catch (error) {
      if (!started) return sendFailure(reply, error);
      const failure = error instanceof RequestFailed ? error : new RequestFailed(500, "server_error", error instanceof Error ? error.message : String(error));
      send(errorBody(failure.status, failure.type, failure.message));
      reply.raw.end();
      return reply;
    }
  }
}

function sendFailure(reply: FastifyReply, error: unknown): FastifyReply {
  const failure = error instanceof RequestFailed ? error : new RequestFailed(500, "server_error", error instanceof Error ? error.message : String(error));
  return reply.code(failure.status === 499 ? 400 : failure.status).send(errorBody(failure.status, failure.type, failure.message));
}

function readSampling(body: unknown): Sampling {
  const parsed = samplingSchema.safeParse(body);
  if (!parsed.success) throw Object.assign(new Error(describeIssues(parsed.error.issues, "request body")), { statusCode: 400 });
  return parsed.data;
}

function tokenText(model: LlamaModel, token: Token | null): string {
  return token === null ? "" : model.detokenize([token], true);
}

function normalized(vector: readonly number[]): number[] {
  const norm = Math.sqrt(vector.reduce((sum, value) => sum + value * value, 0));
  return norm > 0 ? vector.map((value) => value / norm) : [...vector];
}

/**
 * Runs one request on a free sequence of the context for its adapters:
 * the prompt, then tokens until an end-of-generation token, a stop string,
 * max_tokens or the slot's context ends it. `onText` gets each piece of text
 * as soon as it is whole UTF-8 and cannot be the start of a stop string.
 */
async function generate(
  state: Loaded,
  args: LlamaServerArguments,
  metrics: LlamaMetrics,
  promptTokens: readonly Token[],
  maxTokens: number | undefined,
  sampling: Sampling,
  scales: readonly number[],
  signal: AbortSignal,
  onText: (text: string) => void,
): Promise<Generation> {
  if (promptTokens.length === 0) throw new RequestFailed(400, "invalid_request_error", "the prompt is empty");
  const room = state.slotContext - promptTokens.length;
  if (room <= 0) {
    throw new RequestFailed(400, "exceed_context_size_error", `the request exceeds the available context size: the prompt is ${promptTokens.length} tokens and a slot holds ${state.slotContext}`);
  }
  const limit = Math.min(maxTokens ?? room, room);
  const slots = await slotContextFor(state, args, scales);
  const sequence = slots.free.pop();
  if (sequence === undefined) throw new RequestFailed(503, "unavailable_error", "no free sequence in the context (more requests than slots)");
  const stop = new StopMatcher(sampling.stop);
  const generated: Token[] = [];
  let pending: Token[] = [];
  let finishReason: "stop" | "length" = "length";
  const started = performance.now();
  let firstToken: number | undefined;
  try {
    await sequence.clearHistory();
    const tokens = sequence.evaluate([...promptTokens], {
      temperature: sampling.temperature,
      topP: sampling.top_p,
      ...(sampling.top_k !== undefined ? { topK: sampling.top_k } : {}),
      ...(sampling.min_p !== undefined ? { minP: sampling.min_p } : {}),
      ...(sampling.seed !== undefined && sampling.seed >= 0 ? { seed: sampling.seed } : {}),
    });
    for await (const token of tokens) {
      firstToken ??= performance.now();
      if (signal.aborted) break;
      if (state.model.isEogToken(token)) {
        finishReason = "stop";
        break;
      }
      generated.push(token);
      pending.push(token);
      const piece = state.model.detokenize(pending, false, generated.slice(-pending.length - 8, -pending.length));
      // A character split over tokens waits for its last byte.
      if (!piece.endsWith("\uFFFD") || pending.length >= 4) {
        pending = [];
        const { emit, stopped } = stop.push(piece);
        if (emit !== "") onText(emit);
        if (stopped) {
          finishReason = "stop";
          break;
        }
      }
      if (generated.length >= limit) break;
    }
    if (!stop.stopped) {
      const rest = stop.flush();
      if (rest !== "") onText(rest);
    }
  } finally {
    slots.free.push(sequence);
  }
  const ended = performance.now();
  const promptMs = (firstToken ?? ended) - started;
  const predictedMs = ended - (firstToken ?? ended);
  metrics.record({ tokens: promptTokens.length, seconds: promptMs / 1000 }, { tokens: generated.length, seconds: predictedMs / 1000 });
  return { text: stop.text, promptTokens: promptTokens.length, completionTokens: generated.length, finishReason, promptMs, predictedMs };
}

/**
 * The `llmgw llama-engine` process: exits 0 after SIGTERM or SIGINT, 1 when
 * it cannot start or load the model (the reason is the log's last line).
 */
export async function runLlamaEngine(argv: readonly string[]): Promise<void> {
  let handle: LlamaEngineHandle;
  try {
    handle = await startLlamaEngine({ argv, environment: process.env });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const hint = typeof error === "object" && error !== null && "hint" in error ? `\n${String(error.hint)}` : "";
    process.stderr.write(`llmgw llama-engine: cannot start: ${message}${hint}\n`);
    process.exit(1);
  }
  handle.loaded.catch(() => process.exit(1));
  const stop = (signal: string) => {
    process.stdout.write(`llmgw llama-engine: ${signal} received, shutting down\n`);
    // llama.cpp's threads need not be joined: the process ends.
    void handle.close().catch(() => undefined).finally(() => process.exit(0));
    setTimeout(() => process.exit(0), 2000).unref();
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
}

function vocabularySize(model: LlamaModel): number | null {
  const tokens = (model.fileInfo.metadata.tokenizer as { ggml?: { tokens?: readonly unknown[] } } | undefined)?.ggml?.tokens;
  return Array.isArray(tokens) ? tokens.length : null;
}
