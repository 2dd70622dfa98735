import type { ServerResponse } from "node:http";
import Fastify, { type FastifyInstance, type FastifyReply } from "fastify";
import { createHash, timingSafeEqual } from "node:crypto";
import { describeIssues } from "../../catalog/schema-errors.js";
import { ConcurrencyGate } from "./concurrency-gate.js";
import { registerSimComfyRoutes } from "./sim-comfyui.js";
import { faultRequestSchema, loadAdapterRequestSchema, unloadAdapterRequestSchema } from "./openai-request-schemas.js";
import type { SimEngineArguments } from "./parse-engine-argv.js";
import { simCrashExitCode, simFaultSchema, type SimFault } from "./sim-fault.js";
import { SimMetrics } from "./sim-metrics.js";
import type { DecodeContext, DecodePlan, DecodeWire } from "./sim-wire.js";
import { decodeStepMilliseconds, simEnvironmentVariables, timeToFirstTokenMilliseconds, type SimTiming } from "./sim-timing.js";
import { errorBody } from "./openai-error-body.js";
import { registerGenerationRoutes } from "./sim-generation-routes.js";
import { registerPrefillRoutes } from "./sim-prefill-routes.js";
import { SimPrefixCache } from "./sim-prefix-cache.js";
import type { GangHealth } from "./rendezvous.js";
import { failStream, failWhole, gangUnavailable, sleepUntilOrBroken } from "./gang-failure.js";

/** KV capacity per slot when the command line gives no context; only the usage ratio depends on it. */
const defaultContextForCapacity = 4096;

/**
 * One running simulated engine: its HTTP routes, queue, metrics and fault.
 * Kept apart from startSimEngine so the routes read as the engine's behaviour.
 */
export class SimulatedEngine {
  readonly #server: FastifyInstance;
  readonly #gate: ConcurrencyGate;
  readonly #metrics: SimMetrics;
  /** KV tokens held by requests being served, for the usage gauge. */
  #tokensHeld = 0;
  /** Prompts read, as large as the KV cache: a prompt's cached part is not charged to its first token. */
  readonly #prefixCache: SimPrefixCache;
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
    /** Rank 0 of a replica over several nodes: unhealthy until its gang is whole, failing its requests when the gang breaks. */
    readonly gang?: GangHealth,
  ) {
    this.#adapters = [...parsed.adapters];
    this.#gate = new ConcurrencyGate(parsed.concurrency);
    const capacity = (parsed.context ?? defaultContextForCapacity) * parsed.concurrency;
    this.#prefixCache = new SimPrefixCache(capacity);
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
    const trouble = this.gang?.trouble;
    if (trouble !== undefined) {
      await reply.code(503).send(gangUnavailable(trouble));
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

  /** `maxTokensField` is the body field that asked for the answer's length, named as the error's param when the answer is what does not fit. */
  #checkContext(reply: FastifyReply, promptTokens: number, maxTokens: number | undefined, maxTokensField: string, promptField = "messages"): boolean {
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
          promptTokens >= context ? promptField : maxTokensField,
        ),
      );
    return false;
  }

  /**
   * Serves one generation: waits for a slot, "prefills", then produces every
   * choice token by token on the simulated clock, the choices side by side as
   * a batch decodes them, streaming each token as an SSE event or answering
   * once at the end. `wire` shapes the events and the whole answer of the
   * route (chat, completions, responses).
   */
  async #decode(reply: FastifyReply, plan: DecodePlan, wire: DecodeWire): Promise<void> {
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
    const choices = plan.choices();
    const completionTokens = choices.reduce((total, choice) => total + choice.tokens.length, 0);
    const longest = Math.max(0, ...choices.map((choice) => choice.tokens.length));
    const held = plan.promptTokens + completionTokens;
    this.#tokensHeld += held;
    this.#requestCount += 1;
    const cached = plan.promptText === undefined ? 0 : this.#prefixCache.read(plan.promptText, plan.promptTokens);
    const usage = {
      prompt_tokens: plan.promptTokens,
      completion_tokens: completionTokens,
      total_tokens: plan.promptTokens + completionTokens,
      // As vLLM and llama-server report a prefix cache hit; left out on a miss, as before the cache.
      ...(cached > 0 ? { prompt_tokens_details: { cached_tokens: cached } } : {}),
    };
    const admitted = performance.now();
    const firstTokenAt = admitted + timeToFirstTokenMilliseconds(this.timing, plan.promptTokens - cached);
    const step = decodeStepMilliseconds(this.timing);
    const context: DecodeContext = { id: `${plan.idPrefix}-sim-${this.#requestCount}`, created: Math.floor(Date.now() / 1000), choices, usage };
    let finished = false;
    try {
      this.#metrics.recordPromptTokens(plan.promptTokens);
      if (plan.stream) {
        reply.hijack();
        reply.raw.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", connection: "keep-alive" });
        const send = (payload: unknown, event?: string) => reply.raw.write(`${event === undefined ? "" : `event: ${event}\n`}data: ${JSON.stringify(payload)}\n\n`);
        wire.open(send, context);
        for (let position = 0; position < longest; position += 1) {
          await sleepUntilOrBroken(firstTokenAt + position * step, this.gang);
          if (abandoned.signal.aborted) return;
          if (this.gang?.broken.aborted) return failStream(reply.raw, send, this.gang, wire.done);
          if (position === 0) this.#metrics.recordTimeToFirstToken((performance.now() - started) / 1000);
          for (const [index, choice] of choices.entries()) {
            if (position >= choice.tokens.length) continue;
            wire.token(send, context, index, position);
            this.#metrics.recordGenerationTokens(1);
          }
        }
        wire.close(send, context);
        reply.raw.end(wire.done ? "data: [DONE]\n\n" : undefined);
      } else {
        await sleepUntilOrBroken(firstTokenAt, this.gang);
        if (abandoned.signal.aborted) return;
        if (this.gang?.broken.aborted) return await failWhole(reply, this.gang);
        this.#metrics.recordTimeToFirstToken((performance.now() - started) / 1000);
        await sleepUntilOrBroken(firstTokenAt + Math.max(0, longest - 1) * step, this.gang);
        if (abandoned.signal.aborted) return;
        if (this.gang?.broken.aborted) return await failWhole(reply, this.gang);
        this.#metrics.recordGenerationTokens(completionTokens);
        await reply.send(wire.whole(context));
      }
      finished = true;
    } finally {
      release();
      this.#tokensHeld -= held;
      const milliseconds = performance.now() - started;
      const finishReason = choices[0]?.finishReason ?? "stop";
      if (finished) this.#metrics.recordFinished(milliseconds / 1000, finishReason === "tool_calls" ? "stop" : finishReason);
      this.log(
        `POST ${plan.route} model=${plan.model} stream=${plan.stream} ` +
          `prompt_tokens=${plan.promptTokens} completion_tokens=${completionTokens}${choices.length > 1 ? ` n=${choices.length}` : ""} ` +
          `queued_ms=${(admitted - started).toFixed(0)} total_ms=${milliseconds.toFixed(0)} ${finished ? `finish=${finishReason}` : "abandoned"}`,
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
      const trouble = this.gang?.trouble;
      if (trouble !== undefined) return reply.code(503).send({ ...gangUnavailable(trouble), status: "unhealthy", simulated: true });
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

    registerGenerationRoutes(server, {
      engine: parsed.engine,
      admit: (reply, model) => this.#admit(reply, model),
      checkContext: (reply, promptTokens, maxTokens, maxTokensField, promptField) => this.#checkContext(reply, promptTokens, maxTokens, maxTokensField, promptField),
      answeringName: (body) => this.#answeringName(body),
      decode: (reply, plan, wire) => this.#decode(reply, plan, wire),
    });

    registerPrefillRoutes(server, {
      engine: parsed.engine,
      gate: this.#gate,
      timing: this.timing,
      metrics: this.#metrics,
      admit: (reply, model) => this.#admit(reply, model),
      countRequest: () => {
        this.#requestCount += 1;
      },
      requestCount: () => this.#requestCount,
      countTowardCrash: (response) => this.#countTowardCrash(response),
      log: (line) => this.log(line),
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
