import { Template } from "@huggingface/jinja";
import Fastify, { type FastifyInstance, type FastifyReply } from "fastify";
import type { LlamaModel } from "node-llama-cpp";
import { guardWithApiKey } from "../openai-server/api-key-guard.js";
import { ConcurrencyGate } from "../openai-server/concurrency-gate.js";
import { errorBody } from "../openai-server/openai-error-body.js";
import { registerEmbeddingRoutes } from "./embedding-routes.js";
import { slotPoolFor, type Loaded, type RouteContext } from "./engine-state.js";
import { registerGenerateRoutes } from "./generate-routes.js";
import { llamaOpenPath, registerControlRoutes } from "./llama-control-routes.js";
import { LlamaMetrics } from "./llama-metrics.js";
import { engineUsesCards } from "./llama-build.js";
import { loadLlama } from "./llama-runtime.js";
import { parseLlamaServerArguments, type LlamaServerArguments } from "./llama-server-arguments.js";

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

/**
 * llmgw's built-in llama.cpp engine: llama-server's HTTP API, in
 * llama-server's shapes, served by llama.cpp through node-llama-cpp. It takes
 * llama-server's command line (the llamacpp driver builds one argv for both)
 * and serves what the agent and the gateway use: /health (503 while the model
 * loads), /metrics under llama-server's names, /v1/models,
 * /v1/chat/completions with the model's own chat template from the GGUF
 * (tools and structured output through grammars: generate-routes.ts),
 * /v1/completions and /v1/embeddings (with --embedding), streaming with usage.
 *
 * --parallel slots serve at once; further requests wait in a bounded queue
 * (503 past it). --ctx-size is the KV cache of all slots together, so each
 * slot holds ctx-size / parallel tokens, as in llama-server, and keeps its
 * tokens between requests for the next prompt that shares their prefix.
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
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- a GGUF file's metadata is outside input: its types promise keys a file may lack
  const templateText = model.fileInfo.metadata.tokenizer?.chat_template;
  checkPooling(model, args, log);
  const slotContext = Math.max(64, Math.floor((args.contextSize ?? model.trainContextSize * args.parallel) / args.parallel));
  const threads = args.threads ?? 0;
  const embeddings = args.embedding ? await model.createEmbeddingContext({ contextSize: slotContext, threads }) : undefined;
  const state: Loaded = {
    runtime,
    model,
    template: templateText ? new Template(templateText) : undefined,
    templateTakesTools: templateText?.includes("tool_calls") === true && templateText.includes("tools"),
    slotContext,
    embeddings,
    contexts: new Map(),
  };
  // The base model's context is made now, so the first request does not wait for it and a failure shows at load.
  if (!args.embedding) await slotPoolFor(state, args, args.adapters.map((adapter) => adapter.scale));
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

function registerRoutes(server: FastifyInstance, route: RouteContext): void {
  const { args } = route;
  if (args.apiKey !== undefined) {
    guardWithApiKey(server, { apiKey: args.apiKey, isOpen: llamaOpenPath, refusal: { type: "authentication_error", message: "Invalid API Key" }, log: route.log });
  }
  server.setErrorHandler((error: { statusCode?: number; message?: string }, _request, reply) => {
    const status = error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 600 ? error.statusCode : 500;
    void reply.code(status).send(errorBody(status, status < 500 ? "invalid_request_error" : "server_error", error.message ?? "internal error"));
  });
  registerControlRoutes(server, route);

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
  registerGenerateRoutes(server, route, readyToGenerate);
  registerEmbeddingRoutes(server, route);
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
