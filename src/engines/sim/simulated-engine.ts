import Fastify, { type FastifyInstance, type FastifyReply } from "fastify";
import { guardWithApiKey } from "../openai-server/api-key-guard.js";
import { ConcurrencyGate } from "../openai-server/concurrency-gate.js";
import { errorBody } from "../openai-server/openai-error-body.js";
import type { GangHealth } from "./rendezvous.js";
import { gangUnavailable } from "./gang-failure.js";
import type { SimEngineArguments } from "./parse-engine-argv.js";
import { registerAdapterRoutes, ServedAdapters } from "./sim-adapters.js";
import { registerSimComfyRoutes } from "./sim-comfyui.js";
import { registerControlRoutes, simOpenPath } from "./sim-control-routes.js";
import { decodeGeneration, type SimLoad } from "./sim-decode.js";
import type { SimFault } from "./sim-fault.js";
import { SimFaultState } from "./sim-fault-state.js";
import { registerGenerationRoutes } from "./sim-generation-routes.js";
import { SimMetrics } from "./sim-metrics.js";
import { registerPrefillRoutes } from "./sim-prefill-routes.js";
import { SimPrefixCache } from "./sim-prefix-cache.js";
import type { SimTiming } from "./sim-timing.js";

/** KV capacity per slot when the command line gives no context; only the usage ratio depends on it. */
const defaultContextForCapacity = 4096;

/**
 * One running simulated engine: its state (queue, counters, adapters,
 * fault) and the checks every inference request passes. Its routes are
 * registered by family: generation (sim-generation-routes.ts), embeddings,
 * rerank and score (sim-prefill-routes.ts), control (sim-control-routes.ts),
 * runtime adapters (sim-adapters.ts) and ComfyUI's (sim-comfyui.ts).
 */
export class SimulatedEngine {
  readonly #server: FastifyInstance;
  readonly gate: ConcurrencyGate;
  readonly metrics: SimMetrics;
  readonly load: SimLoad = { requests: 0, tokensHeld: 0 };
  /** Prompts read, as large as the KV cache: a prompt's cached part is not charged to its first token. */
  readonly prefixCache: SimPrefixCache;
  readonly adapters: ServedAdapters;
  readonly fault: SimFaultState;

  constructor(
    readonly parsed: SimEngineArguments,
    readonly cards: readonly string[],
    readonly timing: SimTiming,
    initialFault: SimFault,
    readonly log: (line: string) => void,
    exit: (code: number) => void,
    readonly access: { readonly host: string; readonly apiKey: string | undefined } = { host: "127.0.0.1", apiKey: undefined },
    /** Whether adapters load and unload while it runs (vLLM's and SGLang's load endpoints). */
    readonly runtimeAdapters = false,
    /** Rank 0 of a replica over several nodes: unhealthy until its gang is whole, failing its requests when the gang breaks. */
    readonly gang?: GangHealth,
  ) {
    this.adapters = new ServedAdapters(parsed.modelName, parsed.adapters);
    this.gate = new ConcurrencyGate(parsed.concurrency);
    const capacity = (parsed.context ?? defaultContextForCapacity) * parsed.concurrency;
    this.prefixCache = new SimPrefixCache(capacity);
    this.metrics = new SimMetrics(parsed.engine, parsed.modelName, () => ({
      running: this.gate.running,
      waiting: this.gate.waiting,
      kvCacheUsage: Math.min(1, this.load.tokensHeld / capacity),
    }));
    this.fault = new SimFaultState(initialFault, log, exit);
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

  /** The checks every inference request passes before it may queue; a reply was sent when it returns false. */
  async #admit(reply: FastifyReply, model: string): Promise<boolean> {
    if (this.adapters.resolve(model) === undefined) {
      await reply.code(404).send(errorBody(404, "NotFoundError", `The model \`${model}\` does not exist.`));
      return false;
    }
    const trouble = this.gang?.trouble;
    if (trouble !== undefined) {
      await reply.code(503).send(gangUnavailable(trouble));
      return false;
    }
    if (this.fault.kind === "error-500") {
      this.log(`POST ${reply.request.url} model=${model} status=500 (fault error-500)`);
      await reply.code(500).send(errorBody(500, "InternalServerError", "simulated engine failure (fault error-500)"));
      return false;
    }
    if (this.fault.kind === "stall") {
      this.log(`POST ${reply.request.url} model=${model} stalled (fault stall)`);
      // Never answers; close() drops the connection.
      await new Promise<never>(() => undefined);
    }
    return true;
  }

  /** `maxTokensField` is the body field that asked for the answer's length, named as the error's param when the answer is what does not fit. */
  #checkContext(reply: FastifyReply, promptTokens: number, maxTokens: number | undefined, maxTokensField: string, promptField = "messages"): boolean {
    const context = this.parsed.context;
    if (context === undefined) return true;
    const requested = promptTokens + (maxTokens ?? 0);
    if (promptTokens < context && requested <= context) return true;
    // vLLM's wording, so clients and the gateway see what a real engine says.
    const message =
      `This model's maximum context length is ${context} tokens. However, you requested ${requested} tokens ` +
      `(${promptTokens} in the messages, ${maxTokens ?? 0} in the completion). Please reduce the length of the messages or completion.`;
    void reply.code(400).send(errorBody(400, "BadRequestError", message, promptTokens >= context ? promptField : maxTokensField));
    return false;
  }

  #routes(): void {
    const server = this.#server;
    const { parsed, access } = this;
    // As the real engines do with an API key: the OpenAI routes need it, health and metrics (which the agent polls) do not.
    if (access.apiKey !== undefined) {
      guardWithApiKey(server, {
        apiKey: access.apiKey,
        isOpen: simOpenPath,
        refusal: { type: "AuthenticationError", message: "Unauthorized: this engine needs its API key as a bearer token" },
        log: this.log,
      });
    }
    registerControlRoutes(server, this);
    if (parsed.engine === "comfyui") {
      void server.register(async (instance) =>
        registerSimComfyRoutes(instance, { gate: this.gate, log: this.log, failing: () => this.fault.kind === "error-500", executionFails: () => this.fault.kind === "execution-error" }),
      );
    }
    const admit = (reply: FastifyReply, model: string) => this.#admit(reply, model);
    registerGenerationRoutes(server, {
      engine: parsed.engine,
      admit,
      checkContext: (reply, promptTokens, maxTokens, maxTokensField, promptField) => this.#checkContext(reply, promptTokens, maxTokens, maxTokensField, promptField),
      answeringName: (body) => this.adapters.answeringName(body),
      decode: (reply, plan, wire) => decodeGeneration(this, reply, plan, wire),
    });
    registerPrefillRoutes(server, { engine: parsed.engine, gate: this.gate, timing: this.timing, metrics: this.metrics, load: this.load, fault: this.fault, admit, log: this.log });
    if (this.runtimeAdapters) registerAdapterRoutes(server, this.adapters, parsed.engine === "vllm" ? "/v1" : "", this.log);
  }
}
