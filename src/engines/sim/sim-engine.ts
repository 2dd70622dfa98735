import type { ServerResponse } from "node:http";
import Fastify, { type FastifyInstance, type FastifyReply } from "fastify";
import { describeIssues } from "../../catalog/schema-errors.js";
import type { EngineName } from "../../catalog/schema.js";
import { ConcurrencyGate } from "./concurrency-gate.js";
import { registerSimComfyRoutes } from "./sim-comfyui.js";
import {
  chatCompletionRequestSchema,
  completionRequestSchema,
  embeddingRequestSchema,
  faultRequestSchema,
  loadAdapterRequestSchema,
  unloadAdapterRequestSchema,
} from "./openai-request-schemas.js";
import { vllmRuntimeLoraVariable } from "../runtime-adapters.js";
import { parseEngineArgv, type SimEngineArguments } from "./parse-engine-argv.js";
import { simEngineAccess } from "./sim-engine-access.js";
import { createHash, timingSafeEqual } from "node:crypto";
import { simCrashExitCode, simFaultSchema, simLoadFailureExitCode, type SimFault } from "./sim-fault.js";
import { SimMetrics } from "./sim-metrics.js";
import { approximateTokenCount, embeddingToBase64, simulatedAnswer, simulatedEmbedding } from "./sim-text.js";
import {
  decodeStepMilliseconds,
  simEnvironmentVariables,
  simTimingFromEnvironment,
  timeToFirstTokenMilliseconds,
  type SimTiming,
} from "./sim-timing.js";
import { EngineArgumentsInvalid } from "../../errors/engine-errors.js";

export interface SimEngineOptions {
  readonly engine: EngineName;
  /** The argv the engine's driver built, without argv[0]. */
  readonly argv: readonly string[];
  /** The engine's environment (the driver's env on top of the agent's); LLMGW_SIM_* are read here. */
  readonly environment?: Readonly<Record<string, string | undefined>>;
  /** Where log lines go: stdout by default, which the agent keeps as the replica's log. */
  readonly log?: (line: string) => void;
  /** How a crash ends the engine: process.exit by default; tests pass a recorder. */
  readonly exit?: (code: number) => void;
}

export interface SimEngineHandle {
  /** http://127.0.0.1:PORT, without a trailing slash. */
  readonly url: string;
  readonly port: number;
  readonly arguments: SimEngineArguments;
  close(): Promise<void>;
}

/** Thrown by startSimEngine when a fault ended the engine before it served (only seen when `exit` returns, as in tests). */
export class SimEngineExited extends Error {
  constructor(readonly exitCode: number) {
    super(`the simulated engine exited with status ${exitCode} before serving`);
    this.name = "SimEngineExited";
  }
}

/** Embedding width when the request does not ask: that of the small sentence-transformers models. */
const defaultEmbeddingDimensions = 384;

/** KV capacity per slot when the command line gives no context; only the usage ratio depends on it. */
const defaultContextForCapacity = 4096;

const sleep = (milliseconds: number) =>
  new Promise<void>((resolve) => {
    if (milliseconds > 0 && Number.isFinite(milliseconds)) setTimeout(resolve, milliseconds);
    // Still yield, so streamed chunks leave one by one even at infinite speed.
    else setImmediate(resolve);
  });

/** Waits until `deadline` (a performance.now() time); a late caller just yields, so small steps do not add up to timer granularity. */
const sleepUntil = (deadline: number) => sleep(deadline - performance.now());

interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: number };
}

function errorBody(status: number, type: string, message: string): OpenAIErrorBody {
  return { error: { message, type, param: null, code: status } };
}

/**
 * Starts the simulated engine on 127.0.0.1 at the port its argv
 * names (0 picks a free one, for tests). It reads the same command line and
 * environment as the real engine, serves the OpenAI API for real, and acts
 * out faults on request. It never claims to be a real engine: models are
 * owned by "llmgw-sim" and its health says simulated.
 */
export async function startSimEngine(options: SimEngineOptions): Promise<SimEngineHandle> {
  const environment = options.environment ?? {};
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const exit = options.exit ?? ((code: number) => process.exit(code));
  const parsed = parseEngineArgv(options.engine, options.argv, environment);
  const cards = (environment["CUDA_VISIBLE_DEVICES"] ?? "").split(",").filter((card) => card.trim() !== "");
  const timing = simTimingFromEnvironment(options.engine, environment, parsed.cardCount);
  const faultText = environment[simEnvironmentVariables.fault];
  let fault: SimFault = { kind: "none" };
  if (faultText !== undefined && faultText !== "") {
    const read = simFaultSchema.safeParse(faultText);
    if (!read.success) throw new EngineArgumentsInvalid(options.engine, `${simEnvironmentVariables.fault}: ${describeIssues(read.error.issues, "value")}`);
    fault = read.data;
  }
  const loadText = environment[simEnvironmentVariables.loadMilliseconds] ?? "0";
  const loadMilliseconds = Number(loadText);
  if (!Number.isFinite(loadMilliseconds) || loadMilliseconds < 0) {
    throw new EngineArgumentsInvalid(options.engine, `${simEnvironmentVariables.loadMilliseconds} must be milliseconds, 0 or more, got ${JSON.stringify(loadText)}`);
  }

  log(`llmgw sim-engine: simulated ${parsed.engine} (not a real engine) loading "${parsed.modelName}" from ${parsed.weightsPath}`);
  if (loadMilliseconds > 0) await sleep(loadMilliseconds);
  if (fault.kind === "fail-load") {
    log(`llmgw sim-engine: simulated failure while loading ${parsed.weightsPath}: CUDA out of memory (fault fail-load)`);
    exit(simLoadFailureExitCode);
    throw new SimEngineExited(simLoadFailureExitCode);
  }
  if (fault.kind === "crash-now") {
    log("llmgw sim-engine: simulated crash at start (fault crash-now)");
    exit(simCrashExitCode);
    throw new SimEngineExited(simCrashExitCode);
  }

  const access = simEngineAccess(options.engine, options.argv, environment);
  // As the real engines decide it: vLLM loads adapters at runtime only with LoRA enabled and its variable set; SGLang whenever LoRA is enabled.
  const loraEnabled = parsed.adapters.length > 0 || options.argv.includes("--enable-lora");
  const runtimeVariable = (environment[vllmRuntimeLoraVariable] ?? "").toLowerCase();
  const runtimeAdapters = loraEnabled && (parsed.engine === "sglang" || (parsed.engine === "vllm" && (runtimeVariable === "true" || runtimeVariable === "1")));
  const engine = new SimulatedEngine(parsed, cards, timing, fault, log, exit, access, runtimeAdapters);
  const address = await engine.listen();
  const port = Number(new URL(address).port);
  const adapterNames = parsed.adapters.map((adapter) => adapter.name);
  log(
    `llmgw sim-engine: simulated ${parsed.engine} serving "${parsed.modelName}"` +
      (adapterNames.length > 0 ? ` with adapters ${adapterNames.join(", ")}` : "") +
      ` on http://${access.host}:${port}${access.apiKey === undefined ? "" : " (API key required)"}; cards [${cards.join(",")}], ${parsed.concurrency} at once,` +
      ` context ${parsed.context ?? "engine default"}, decode ${timing.decodeTokensPerSecond.toFixed(0)} tokens/s (${timing.source}), speed ×${timing.speed}` +
      (fault.kind === "none" ? "" : `, fault ${fault.kind}`),
  );
  return { url: `http://127.0.0.1:${port}`, port, arguments: parsed, close: () => engine.close() };
}

/**
 * One running simulated engine: its HTTP routes, queue, metrics and fault.
 * Kept apart from startSimEngine so the routes read as the engine's behaviour.
 */
class SimulatedEngine {
  readonly #server: FastifyInstance;
  readonly #gate: ConcurrencyGate;
  readonly #metrics: SimMetrics;
  /** KV tokens held by requests being served, for the usage gauge. */
  #tokensHeld = 0;
  #requestCount = 0;
  /** Inference requests left before a crash-after fault ends the engine. */
  #requestsBeforeCrash: number | undefined;
  #fault: SimFault = { kind: "none" };
  #exiting = false;
  /** The adapters served now: those of the command line, plus those loaded at runtime, minus those unloaded. */
  #adapters: { readonly name: string; readonly path: string; readonly scale?: number }[];

  constructor(
    readonly parsed: SimEngineArguments,
    readonly cards: readonly string[],
    readonly timing: SimTiming,
    initialFault: SimFault,
    readonly log: (line: string) => void,
    readonly exit: (code: number) => void,
    readonly access: { readonly host: string; readonly apiKey: string | undefined } = { host: "127.0.0.1", apiKey: undefined },
    /** Whether adapters load and unload while it runs (vLLM's and SGLang's load endpoints). */
    readonly runtimeAdapters = false,
  ) {
    this.#adapters = [...parsed.adapters];
    this.#gate = new ConcurrencyGate(parsed.concurrency);
    const capacity = (parsed.context ?? defaultContextForCapacity) * parsed.concurrency;
    this.#metrics = new SimMetrics(parsed.engine, parsed.modelName, () => ({
      running: this.#gate.running,
      waiting: this.#gate.waiting,
      kvCacheUsage: Math.min(1, this.#tokensHeld / capacity),
    }));
    this.#setFault(initialFault);
    // forceCloseConnections: a stalled request must not keep close() waiting forever.
    this.#server = Fastify({ logger: false, forceCloseConnections: true, bodyLimit: 32 * 1024 * 1024 });
    this.#routes();
  }

  async listen(): Promise<string> {
    return this.#server.listen({ host: this.access.host, port: this.parsed.port });
  }

  async close(): Promise<void> {
    await this.#server.close();
  }

  #setFault(fault: SimFault): void {
    this.#fault = fault;
    this.#requestsBeforeCrash = fault.kind === "crash-after" ? fault.requests : undefined;
    if (fault.kind === "crash-after" && fault.requests === 0) this.#crash("crash-after:0");
  }

  #crash(reason: string): void {
    if (this.#exiting) return;
    this.#exiting = true;
    this.log(`llmgw sim-engine: simulated crash (fault ${reason}), exiting with status ${simCrashExitCode}`);
    this.exit(simCrashExitCode);
  }

  /** Counts a finished inference request toward a crash-after fault, once its response has left. */
  #countTowardCrash(response: ServerResponse): void {
    if (this.#requestsBeforeCrash === undefined) return;
    this.#requestsBeforeCrash -= 1;
    if (this.#requestsBeforeCrash > 0) return;
    const crash = () => this.#crash(`crash-after:${this.#fault.kind === "crash-after" ? this.#fault.requests : 0}`);
    if (response.writableFinished) crash();
    else response.once("finish", crash);
  }

  /** Resolves the requested name to the base model or one of its adapters (by name, or SGLang's BASE:ADAPTER). */
  #resolveModel(name: string): { kind: "base" } | { kind: "adapter"; name: string } | undefined {
    if (name === this.parsed.modelName) return { kind: "base" };
    const prefix = `${this.parsed.modelName}:`;
    const adapterName = name.startsWith(prefix) ? name.slice(prefix.length) : name;
    const adapter = this.#adapters.find((candidate) => candidate.name === adapterName);
    return adapter === undefined ? undefined : { kind: "adapter", name: adapter.name };
  }

  /**
   * Who answers, for the answer's text: the adapter the request chose in any
   * engine's way (model name, SGLang's lora_path, llama-server's lora list),
   * else the base model. Lets tests see that an adapter request reached it.
   */
  #answeringName(body: { model: string; lora?: { id: number; scale: number }[] | null | undefined; lora_path?: string | null | undefined }): string {
    const resolved = this.#resolveModel(body.model);
    if (resolved?.kind === "adapter") return resolved.name;
    const byPath = this.#adapters.find((adapter) => adapter.name === body.lora_path);
    if (byPath !== undefined) return byPath.name;
    const applied = body.lora?.find((selection) => selection.scale > 0);
    const byPosition = applied === undefined ? undefined : this.#adapters[applied.id];
    return byPosition?.name ?? this.parsed.modelName;
  }

  /** The checks every inference request passes before it may queue; a reply was sent when it returns false. */
  async #admit(reply: FastifyReply, model: string): Promise<boolean> {
    if (this.#resolveModel(model) === undefined) {
      await reply.code(404).send(errorBody(404, "NotFoundError", `The model \`${model}\` does not exist.`));
      return false;
    }
    if (this.#fault.kind === "error-500") {
      this.log(`POST ${reply.request.url} model=${model} status=500 (fault error-500)`);
      await reply.code(500).send(errorBody(500, "InternalServerError", "simulated engine failure (fault error-500)"));
      return false;
    }
    if (this.#fault.kind === "stall") {
      this.log(`POST ${reply.request.url} model=${model} stalled (fault stall)`);
      // Never answers; close() drops the connection.
      await new Promise<never>(() => undefined);
    }
    return true;
  }

  /**
   * Runtime LoRA loading as the engine it pretends to be answers it: vLLM
   * with plain text ("Success: …") and 400 for a name already loaded or
   * unknown; SGLang with JSON { success, message }.
   */
  #adapterRoutes(prefix: string): void {
    const vllm = prefix === "/v1";
    const answer = (reply: FastifyReply, status: number, message: string) =>
      vllm ? (status === 200 ? reply.type("text/plain").send(message) : reply.code(status).send(errorBody(status, "BadRequestError", message))) : reply.code(status).send({ success: status === 200, message });
    this.#server.post(`${prefix}/load_lora_adapter`, async (request, reply) => {
      const body = loadAdapterRequestSchema.safeParse(request.body);
      if (!body.success) return answer(reply, 400, `expected {"lora_name": ..., "lora_path": ...}: ${describeIssues(body.error.issues, "body")}`);
      const name = body.data.lora_name;
      if (name === this.parsed.modelName || this.#adapters.some((adapter) => adapter.name === name)) return answer(reply, 400, `The lora adapter '${name}' has already been loaded.`);
      this.#adapters.push({ name, path: body.data.lora_path });
      this.log(`POST ${prefix}/load_lora_adapter lora_name=${name} lora_path=${body.data.lora_path}`);
      return answer(reply, 200, `Success: LoRA adapter '${name}' added successfully.`);
    });
    this.#server.post(`${prefix}/unload_lora_adapter`, async (request, reply) => {
      const body = unloadAdapterRequestSchema.safeParse(request.body);
      if (!body.success) return answer(reply, 400, `expected {"lora_name": ...}: ${describeIssues(body.error.issues, "body")}`);
      const name = body.data.lora_name;
      const index = this.#adapters.findIndex((adapter) => adapter.name === name);
      if (index < 0) return answer(reply, 404, `The lora adapter '${name}' cannot be found.`);
      this.#adapters.splice(index, 1);
      this.log(`POST ${prefix}/unload_lora_adapter lora_name=${name}`);
      return answer(reply, 200, `Success: LoRA adapter '${name}' removed successfully.`);
    });
  }

  #checkContext(reply: FastifyReply, promptTokens: number, maxTokens: number | undefined): boolean {
    const context = this.parsed.context;
    if (context === undefined) return true;
    const requested = promptTokens + (maxTokens ?? 0);
    if (promptTokens < context && requested <= context) return true;
    // vLLM's wording, so clients and the gateway see what a real engine says.
    void reply
      .code(400)
      .send(
        errorBody(
          400,
          "BadRequestError",
          `This model's maximum context length is ${context} tokens. However, you requested ${requested} tokens ` +
            `(${promptTokens} in the messages, ${maxTokens ?? 0} in the completion). Please reduce the length of the messages or completion.`,
        ),
      );
    return false;
  }

  /**
   * Serves one generation: waits for a slot, "prefills", then produces the
   * answer token by token on the simulated clock, streaming each token as an
   * SSE chunk or answering once at the end.
   */
  async #generate(
    reply: FastifyReply,
    request: {
      kind: "chat" | "completion";
      model: string;
      /** The model or adapter whose name the answer carries. */
      answeringAs: string;
      promptText: string;
      promptTokens: number;
      maxTokens: number | undefined;
      ignoreEos: boolean;
      stream: boolean;
      includeUsage: boolean;
    },
  ): Promise<void> {
    const started = performance.now();
    const abandoned = new AbortController();
    reply.raw.once("close", () => {
      if (!reply.raw.writableFinished) abandoned.abort();
    });
    let release: () => void;
    try {
      release = await this.#gate.acquire(abandoned.signal);
    } catch {
      return; // The client left while queued; there is no one to answer.
    }
    const answer = simulatedAnswer(request.answeringAs, request.promptText, request.maxTokens, request.ignoreEos);
    const held = request.promptTokens + answer.tokens.length;
    this.#tokensHeld += held;
    this.#requestCount += 1;
    const id = `${request.kind === "chat" ? "chatcmpl" : "cmpl"}-sim-${this.#requestCount}`;
    const created = Math.floor(Date.now() / 1000);
    const object = request.kind === "chat" ? "chat.completion" : "text_completion";
    const usage = {
      prompt_tokens: request.promptTokens,
      completion_tokens: answer.tokens.length,
      total_tokens: request.promptTokens + answer.tokens.length,
    };
    const admitted = performance.now();
    const firstTokenAt = admitted + timeToFirstTokenMilliseconds(this.timing, request.promptTokens);
    const step = decodeStepMilliseconds(this.timing);
    let finished = false;
    try {
      this.#metrics.recordPromptTokens(request.promptTokens);
      if (request.stream) {
        reply.hijack();
        reply.raw.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", connection: "keep-alive" });
        const send = (payload: unknown) => reply.raw.write(`data: ${JSON.stringify(payload)}\n\n`);
        const chunk = (choice: Record<string, unknown>) =>
          send({ id, object: request.kind === "chat" ? "chat.completion.chunk" : "text_completion", created, model: request.model, choices: [{ index: 0, logprobs: null, ...choice }] });
        if (request.kind === "chat") chunk({ delta: { role: "assistant", content: "" }, finish_reason: null });
        for (const [index, token] of answer.tokens.entries()) {
          await sleepUntil(firstTokenAt + index * step);
          if (abandoned.signal.aborted) return;
          if (index === 0) this.#metrics.recordTimeToFirstToken((performance.now() - started) / 1000);
          if (request.kind === "chat") chunk({ delta: { content: token }, finish_reason: null });
          else chunk({ text: token, finish_reason: null });
          this.#metrics.recordGenerationTokens(1);
        }
        if (request.kind === "chat") chunk({ delta: {}, finish_reason: answer.finishReason });
        else chunk({ text: "", finish_reason: answer.finishReason });
        if (request.includeUsage) send({ id, object: request.kind === "chat" ? "chat.completion.chunk" : "text_completion", created, model: request.model, choices: [], usage });
        reply.raw.end("data: [DONE]\n\n");
      } else {
        await sleepUntil(firstTokenAt);
        if (abandoned.signal.aborted) return;
        this.#metrics.recordTimeToFirstToken((performance.now() - started) / 1000);
        await sleepUntil(firstTokenAt + Math.max(0, answer.tokens.length - 1) * step);
        if (abandoned.signal.aborted) return;
        this.#metrics.recordGenerationTokens(answer.tokens.length);
        const text = answer.tokens.join("");
        const choice =
          request.kind === "chat"
            ? { index: 0, message: { role: "assistant", content: text }, logprobs: null, finish_reason: answer.finishReason }
            : { index: 0, text, logprobs: null, finish_reason: answer.finishReason };
        await reply.send({ id, object, created, model: request.model, choices: [choice], usage });
      }
      finished = true;
    } finally {
      release();
      this.#tokensHeld -= held;
      const milliseconds = performance.now() - started;
      if (finished) this.#metrics.recordFinished(milliseconds / 1000, answer.finishReason);
      this.log(
        `POST ${request.kind === "chat" ? "/v1/chat/completions" : "/v1/completions"} model=${request.model} stream=${request.stream} ` +
          `prompt_tokens=${request.promptTokens} completion_tokens=${answer.tokens.length} ` +
          `queued_ms=${(admitted - started).toFixed(0)} total_ms=${milliseconds.toFixed(0)} ${finished ? `finish=${answer.finishReason}` : "abandoned"}`,
      );
      if (finished) this.#countTowardCrash(reply.raw);
    }
  }

  #routes(): void {
    const server = this.#server;
    const parsed = this.parsed;

    // As vLLM and llama-server do with an API key: the OpenAI routes need it, health and metrics
    // (which the agent polls) do not. The simulation's own /sim routes stay open for tests.
    const apiKey = this.access.apiKey;
    if (apiKey !== undefined) {
      server.addHook("onRequest", async (request, reply) => {
        if (!request.url.startsWith("/v1/")) return;
        const given = /^Bearer\s+(\S+)$/i.exec(request.headers.authorization ?? "")?.[1] ?? "";
        // Hashed first so the comparison takes the same time whatever the length given.
        const digest = (text: string) => createHash("sha256").update(text).digest();
        if (timingSafeEqual(digest(given), digest(apiKey))) return;
        this.log(`${request.method} ${request.url.split("?")[0]} status=401 (no valid API key)`);
        await reply.code(401).send(errorBody(401, "AuthenticationError", "Unauthorized: this engine needs its API key as a bearer token"));
      });
    }

    const health = async (_request: unknown, reply: FastifyReply) => {
      if (this.#fault.kind === "stall") await new Promise<never>(() => undefined);
      return reply.send({ status: "ok", simulated: true, engine: parsed.engine, model: parsed.modelName });
    };
    // The agent polls health and metrics every few seconds: they are not logged, or the log would be nothing else.
    server.get("/health", health);

    server.get("/system_stats", async (_request, reply) => {
      if (this.#fault.kind === "stall") await new Promise<never>(() => undefined);
      return reply.send({
        system: { os: "simulated", comfyui_version: "simulated (llmgw-sim)", python_version: "none", embedded_python: false, simulated: true },
        devices:
          parsed.cardCount === 0
            ? [{ name: "cpu (simulated)", type: "cpu", index: 0 }]
            : this.cards.map((card, index) => ({ name: `simulated card ${card}`, type: "cuda", index })),
      });
    });

    if (parsed.engine === "comfyui") {
      void server.register(async (instance) =>
        registerSimComfyRoutes(instance, { gate: this.#gate, log: this.log, failing: () => this.#fault.kind === "error-500", executionFails: () => this.#fault.kind === "execution-error" }),
      );
    }

    server.get("/queue", async (_request, reply) => {
      // ComfyUI lists each prompt as [number, id, ...]; only the counts mean anything here.
      const entries = (count: number, offset: number) => Array.from({ length: count }, (_, index) => [offset + index, `sim-${offset + index}`]);
      return reply.send({ queue_running: entries(this.#gate.running, 0), queue_pending: entries(this.#gate.waiting, this.#gate.running) });
    });

    server.get("/metrics", async (_request, reply) => {
      const text = await this.#metrics.registry.metrics();
      return reply.type(this.#metrics.registry.contentType).send(text);
    });

    server.get("/prometheus/metrics", async (_request, reply) => {
      const text = await this.#metrics.trtllmRegistry.metrics();
      return reply.type(this.#metrics.trtllmRegistry.contentType).send(text);
    });

    server.get("/v1/models", async (_request, reply) => {
      const created = Math.floor(Date.now() / 1000);
      return reply.send({
        object: "list",
        data: [
          { id: parsed.modelName, object: "model", created, owned_by: "llmgw-sim", root: parsed.weightsPath, parent: null, max_model_len: parsed.context ?? null },
          ...this.#adapters.map((adapter) => ({
            id: adapter.name,
            object: "model",
            created,
            owned_by: "llmgw-sim",
            root: adapter.path,
            parent: parsed.modelName,
            max_model_len: parsed.context ?? null,
          })),
        ],
      });
    });

    server.post("/v1/chat/completions", async (request, reply) => {
      const body = chatCompletionRequestSchema.safeParse(request.body);
      if (!body.success) return reply.code(400).send(errorBody(400, "BadRequestError", describeIssues(body.error.issues, "body")));
      if (!(await this.#admit(reply, body.data.model))) return reply;
      const flatten = (content: (typeof body.data.messages)[number]["content"]): string =>
        typeof content === "string" ? content : (content ?? []).map((part) => part.text ?? "").join(" ");
      const promptText = body.data.messages.map((message) => `${message.role}: ${flatten(message.content)}`).join("\n");
      const lastUser = [...body.data.messages].reverse().find((message) => message.role === "user");
      const maxTokens = body.data.max_completion_tokens ?? body.data.max_tokens ?? undefined;
      const promptTokens = approximateTokenCount(promptText);
      if (!this.#checkContext(reply, promptTokens, maxTokens)) return reply;
      await this.#generate(reply, {
        kind: "chat",
        model: body.data.model,
        answeringAs: this.#answeringName(body.data),
        promptText: lastUser === undefined ? promptText : flatten(lastUser.content),
        promptTokens,
        maxTokens,
        ignoreEos: body.data.ignore_eos === true,
        stream: body.data.stream === true,
        includeUsage: body.data.stream_options?.include_usage === true,
      });
      return reply;
    });

    server.post("/v1/completions", async (request, reply) => {
      const body = completionRequestSchema.safeParse(request.body);
      if (!body.success) return reply.code(400).send(errorBody(400, "BadRequestError", describeIssues(body.error.issues, "body")));
      if (!(await this.#admit(reply, body.data.model))) return reply;
      const prompt = body.data.prompt;
      const first = Array.isArray(prompt) ? prompt[0] : prompt;
      // Token ids count one each; text is approximated.
      const promptText = typeof first === "string" ? first : Array.isArray(first) ? first.join(" ") : (prompt as number[]).join(" ");
      const promptTokens =
        typeof first === "string" ? approximateTokenCount(first) : Array.isArray(first) ? first.length : (prompt as number[]).length;
      // OpenAI's and vLLM's default for the legacy completions API.
      const maxTokens = body.data.max_tokens ?? 16;
      if (!this.#checkContext(reply, promptTokens, maxTokens)) return reply;
      await this.#generate(reply, {
        kind: "completion",
        model: body.data.model,
        answeringAs: this.#answeringName(body.data),
        promptText,
        promptTokens,
        maxTokens,
        ignoreEos: body.data.ignore_eos === true,
        stream: body.data.stream === true,
        includeUsage: body.data.stream_options?.include_usage === true,
      });
      return reply;
    });

    server.post("/v1/embeddings", async (request, reply) => {
      const body = embeddingRequestSchema.safeParse(request.body);
      if (!body.success) return reply.code(400).send(errorBody(400, "BadRequestError", describeIssues(body.error.issues, "body")));
      if (!(await this.#admit(reply, body.data.model))) return reply;
      const input = body.data.input;
      const texts: string[] =
        typeof input === "string"
          ? [input]
          : input.every((item) => typeof item === "string")
            ? (input as string[])
            : input.every((item) => typeof item === "number")
              ? [(input as number[]).join(" ")]
              : (input as number[][]).map((tokens) => tokens.join(" "));
      const dimensions = body.data.dimensions ?? defaultEmbeddingDimensions;
      const promptTokens = texts.reduce((total, text) => total + approximateTokenCount(text), 0);
      const release = await this.#gate.acquire();
      try {
        await sleep(timeToFirstTokenMilliseconds(this.timing, promptTokens));
        this.#metrics.recordPromptTokens(promptTokens);
        const data = texts.map((text, index) => {
          const vector = simulatedEmbedding(text, dimensions);
          return { object: "embedding", index, embedding: body.data.encoding_format === "base64" ? embeddingToBase64(vector) : vector };
        });
        this.log(`POST /v1/embeddings model=${body.data.model} inputs=${texts.length} prompt_tokens=${promptTokens}`);
        await reply.send({ object: "list", data, model: body.data.model, usage: { prompt_tokens: promptTokens, total_tokens: promptTokens } });
      } finally {
        release();
      }
      this.#countTowardCrash(reply.raw);
      return reply;
    });

    if (this.runtimeAdapters) this.#adapterRoutes(parsed.engine === "vllm" ? "/v1" : "");

    server.get("/sim/status", async (_request, reply) =>
      reply.send({
        simulated: true,
        engine: parsed.engine,
        model: parsed.modelName,
        fault: this.#fault.kind === "crash-after" ? `crash-after:${this.#requestsBeforeCrash ?? 0}` : this.#fault.kind,
        running: this.#gate.running,
        waiting: this.#gate.waiting,
        requests: this.#requestCount,
      }),
    );

    server.post("/sim/fault", async (request, reply) => {
      const body = faultRequestSchema.safeParse(request.body);
      const fault = body.success ? simFaultSchema.safeParse(body.data.fault) : undefined;
      if (!body.success || fault === undefined || !fault.success) {
        const issues = !body.success ? describeIssues(body.error.issues, "body") : fault !== undefined && !fault.success ? describeIssues(fault.error.issues, "body") : "";
        return reply.code(400).send(errorBody(400, "BadRequestError", `expected {"fault": "none | crash-now | crash-after:N | stall | error-500"}: ${issues}`));
      }
      if (fault.data.kind === "fail-load") {
        return reply.code(400).send(errorBody(400, "BadRequestError", `fail-load acts only at start: set ${simEnvironmentVariables.fault}=fail-load`));
      }
      this.log(`POST /sim/fault fault=${body.data.fault.trim()}`);
      if (fault.data.kind === "crash-now") {
        reply.raw.once("finish", () => this.#crash("crash-now"));
        return reply.send({ fault: "crash-now" });
      }
      this.#setFault(fault.data);
      return reply.send({ fault: body.data.fault.trim() });
    });
  }
}

/**
 * The `llmgw sim-engine` process: starts the engine with this process's
 * environment and exits the way a real engine does — 0 after SIGTERM or
 * SIGINT, 1 when it cannot start (a port already taken, a command line it
 * cannot read), and a fault's own status.
 */
export async function runSimEngine(options: { readonly engine: EngineName; readonly argv: readonly string[] }): Promise<SimEngineHandle> {
  let handle: SimEngineHandle;
  try {
    handle = await startSimEngine({ engine: options.engine, argv: options.argv, environment: process.env });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const hint = typeof error === "object" && error !== null && "hint" in error ? `\n${String(error.hint)}` : "";
    process.stderr.write(`llmgw sim-engine: cannot start: ${message}${hint}\n`);
    process.exit(1);
  }
  const stop = (signal: string) => {
    process.stdout.write(`llmgw sim-engine: ${signal} received, shutting down\n`);
    void handle.close().finally(() => process.exit(0));
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
  return handle;
}
