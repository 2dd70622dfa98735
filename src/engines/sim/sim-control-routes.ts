import type { FastifyInstance, FastifyReply } from "fastify";
import type { GangHealth } from "./rendezvous.js";
import { gangUnavailable } from "./gang-failure.js";
import { describeIssues } from "../../catalog/for-engines.js";
import type { ConcurrencyGate } from "../openai-server/concurrency-gate.js";
import { errorBody } from "../openai-server/openai-error-body.js";
import type { SimEngineArguments } from "./parse-engine-argv.js";
import type { ServedAdapters } from "./sim-adapters.js";
import { faultRequestSchema } from "./sim-admin-schemas.js";
import type { SimLoad } from "./sim-decode.js";
import { simFaultSchema } from "./sim-fault.js";
import type { SimFaultState } from "./sim-fault-state.js";
import type { SimMetrics } from "./sim-metrics.js";
import { simEnvironmentVariables } from "./sim-timing.js";

/** What the control routes read of the engine: its arguments, cards, queue, counters, adapters and fault. */
export interface ControlEngine {
  readonly parsed: SimEngineArguments;
  readonly cards: readonly string[];
  readonly gate: ConcurrencyGate;
  readonly metrics: SimMetrics;
  readonly load: SimLoad;
  readonly adapters: ServedAdapters;
  readonly fault: SimFaultState;
  /** Set on rank 0 of a replica over several nodes. */
  readonly gang?: GangHealth | undefined;
  log(line: string): void;
}

/** Never answers, as a stalled engine does; close() drops the connection. */
const stalled = () => new Promise<never>(() => undefined);

/**
 * The routes the agent polls (health and metrics, each engine's own: vLLM's
 * /health and /metrics, trtllm-serve's /prometheus/metrics, ComfyUI's
 * /system_stats and /queue), the model list, and the simulation's own
 * /sim/status and /sim/fault for tests. The agent polls every few seconds:
 * these are not logged, or the log would be nothing else.
 */
export function registerControlRoutes(server: FastifyInstance, engine: ControlEngine): void {
  const { parsed, gate } = engine;
  server.get("/health", async (_request, reply) => {
    if (engine.fault.kind === "stall") await stalled();
    const trouble = engine.gang?.trouble;
    if (trouble !== undefined) return reply.code(503).send({ ...gangUnavailable(trouble), status: "unhealthy", simulated: true });
    return reply.send({ status: "ok", simulated: true, engine: parsed.engine, model: parsed.modelName });
  });
  server.get("/system_stats", async (_request, reply) => {
    if (engine.fault.kind === "stall") await stalled();
    return reply.send({
      system: { os: "simulated", comfyui_version: "simulated (llmgw-sim)", python_version: "none", embedded_python: false, simulated: true },
      devices:
        parsed.cardCount === 0
          ? [{ name: "cpu (simulated)", type: "cpu", index: 0 }]
          : engine.cards.map((card, index) => ({ name: `simulated card ${card}`, type: "cuda", index })),
    });
  });
  server.get("/queue", async (_request, reply) => {
    // ComfyUI lists each prompt as [number, id, ...]; only the counts mean anything here.
    const entries = (count: number, offset: number) => Array.from({ length: count }, (_, index) => [offset + index, `sim-${offset + index}`]);
    return reply.send({ queue_running: entries(gate.running, 0), queue_pending: entries(gate.waiting, gate.running) });
  });
  server.get("/metrics", async (_request, reply) => reply.type(engine.metrics.registry.contentType).send(await engine.metrics.registry.metrics()));
  server.get("/prometheus/metrics", async (_request, reply) => reply.type(engine.metrics.trtllmRegistry.contentType).send(await engine.metrics.trtllmRegistry.metrics()));
  server.get("/v1/models", async (_request, reply) => reply.send(modelList(engine)));
  registerSimAdminRoutes(server, engine);
}

/** vLLM's model list: the base model, then each adapter with the base as its parent. */
function modelList(engine: ControlEngine) {
  const { parsed } = engine;
  const created = Math.floor(Date.now() / 1000);
  const entry = (id: string, root: string, parent: string | null) => ({ id, object: "model", created, owned_by: "llmgw-sim", root, parent, max_model_len: parsed.context ?? null });
  return {
    object: "list",
    data: [entry(parsed.modelName, parsed.weightsPath, null), ...engine.adapters.all.map((adapter) => entry(adapter.name, adapter.path, parsed.modelName))],
  };
}

/** The paths that stay open when the engine has an API key: what the agent polls, and the simulation's own routes for tests. */
export function simOpenPath(path: string): boolean {
  return openPaths.has(path) || path.startsWith("/sim/");
}

const openPaths = new Set(["/health", "/metrics", "/prometheus/metrics", "/system_stats", "/queue"]);

/** The simulation's own routes: what it is doing now, and the fault it acts out. */
function registerSimAdminRoutes(server: FastifyInstance, engine: ControlEngine): void {
  const { parsed, gate } = engine;
  server.get("/sim/status", async (_request, reply) =>
    reply.send({ simulated: true, engine: parsed.engine, model: parsed.modelName, fault: engine.fault.shown, running: gate.running, waiting: gate.waiting, requests: engine.load.requests }),
  );
  server.post("/sim/fault", async (request, reply: FastifyReply) => {
    const body = faultRequestSchema.safeParse(request.body);
    const fault = body.success ? simFaultSchema.safeParse(body.data.fault) : undefined;
    if (!body.success || fault === undefined || !fault.success) {
      const issues = !body.success ? describeIssues(body.error.issues, "body") : fault !== undefined && !fault.success ? describeIssues(fault.error.issues, "body") : "";
      return reply.code(400).send(errorBody(400, "BadRequestError", `expected {"fault": "none | crash-now | crash-after:N | stall | error-500"}: ${issues}`));
    }
    if (fault.data.kind === "fail-load") {
      return reply.code(400).send(errorBody(400, "BadRequestError", `fail-load acts only at start: set ${simEnvironmentVariables.fault}=fail-load`));
    }
    engine.log(`POST /sim/fault fault=${body.data.fault.trim()}`);
    if (fault.data.kind === "crash-now") {
      reply.raw.once("finish", () => engine.fault.crash("crash-now"));
      return reply.send({ fault: "crash-now" });
    }
    engine.fault.set(fault.data);
    return reply.send({ fault: body.data.fault.trim() });
  });
}
