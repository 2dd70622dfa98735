import { Counter, Gauge, Registry } from "prom-client";
import { HistogramSeries, LeanHistogram } from "./lean-histogram.js";
import type { RoutingSnapshot } from "../routing/routing-snapshot.js";

/**
 * One model's label children, made once, and plain numbers for what is only
 * counted: prom-client hashes the label object on every call, which on the
 * request path costs more than the observation itself, so counts are kept
 * here and handed to prom-client when /metrics is read.
 */
export interface ModelMetrics {
  readonly latency: HistogramSeries;
  readonly timeToFirstToken: HistogramSeries;
  /** Requests being answered now: a plain number, read into the gauge at each scrape. */
  inFlight: number;
  /** Counts one answered request with this HTTP status; added to the counter at each scrape. */
  answered(status: number): void;
  /** Counts the tokens the engine reported for one answer; added to the counter at each scrape. */
  countTokens(promptTokens: number, completionTokens: number): void;
}

/**
 * The gateway's Prometheus metrics, in a registry of its own (a server and a
 * test may run several gateways in one process). Labels are bounded: model
 * names come from the catalog, never from what a client typed.
 */
export class GatewayMetrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: "llmgw_gateway_requests_total",
    help: "Requests answered, by the model that answered (or was asked for) and HTTP status",
    labelNames: ["model", "status"] as const,
    registers: [this.registry],
    collect: () => {
      for (const [name, model] of this.#byModel) {
        for (const [status, count] of model.pendingAnswers) {
          if (count === 0) continue;
          this.requests.inc({ model: name, status: String(status) }, count);
          model.pendingAnswers.set(status, 0);
        }
      }
    },
  });
  readonly latency = new LeanHistogram(
    "llmgw_gateway_request_duration_seconds",
    "From the request's arrival to its answer's last byte",
    "model",
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    this.registry,
  );
  readonly timeToFirstToken = new LeanHistogram(
    "llmgw_gateway_time_to_first_token_seconds",
    "From the request's arrival to the first byte of a streamed answer",
    "model",
    [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    this.registry,
  );
  readonly addedTime = new LeanHistogram(
    "llmgw_gateway_added_seconds",
    "The gateway's own time per request: reading, counting and routing before the upstream is called (queue waits excluded)",
    undefined,
    [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025],
    this.registry,
  ).series();
  readonly tokens = new Counter({
    name: "llmgw_gateway_tokens_total",
    help: "Tokens as the engines reported them in usage, by direction (in: prompt, out: completion)",
    labelNames: ["model", "direction"] as const,
    registers: [this.registry],
    collect: () => {
      for (const [name, model] of this.#byModel) {
        if (model.pendingTokensIn > 0) this.tokens.inc({ model: name, direction: "in" }, model.pendingTokensIn);
        if (model.pendingTokensOut > 0) this.tokens.inc({ model: name, direction: "out" }, model.pendingTokensOut);
        model.pendingTokensIn = 0;
        model.pendingTokensOut = 0;
      }
    },
  });
  readonly inFlight = new Gauge({
    name: "llmgw_gateway_in_flight",
    help: "Requests being answered now, by model",
    labelNames: ["model"] as const,
    registers: [this.registry],
    collect: () => {
      for (const [name, model] of this.#byModel) this.inFlight.set({ model: name }, model.inFlight);
    },
  });
  readonly queued = new Gauge({
    name: "llmgw_gateway_queue_length",
    help: "Requests waiting for a model's first ready replica",
    labelNames: ["model"] as const,
    registers: [this.registry],
  });
  readonly retries = new Counter({
    name: "llmgw_gateway_upstream_retries_total",
    help: "Attempts that failed before the first byte and were sent to another replica or fallback",
    labelNames: ["model"] as const,
    registers: [this.registry],
  });
  readonly apiModes = new Counter({
    name: "llmgw_gateway_api_mode_requests_total",
    help: "Requests on Anthropic's Messages API and OpenAI's Responses API, by api and mode: native (passed through to an engine that serves the API) or translated (to a chat completion and back)",
    labelNames: ["api", "mode"] as const,
    registers: [this.registry],
  });
  readonly ejections = new Counter({
    name: "llmgw_gateway_endpoint_ejections_total",
    help: "Times a replica's endpoint was passed over for a few seconds after refusing a connection (refused, reset before any answer, connect timeout), by this gateway process",
    labelNames: ["model"] as const,
    registers: [this.registry],
  });
  readonly replicas = new Gauge({
    name: "llmgw_gateway_replicas",
    help: "Replicas in the routing table, by model and state",
    labelNames: ["model", "state"] as const,
    registers: [this.registry],
    // Every worker of one gateway follows the same table: summed over workers, the count would be N times the fleet.
    aggregator: "max",
  });
  readonly tableRevision = new Gauge({
    name: "llmgw_gateway_routing_revision",
    help: "The revision of the routing table this gateway serves from",
    registers: [this.registry],
    aggregator: "max",
  });

  /** Connections handed to node's HTTP server since the last scrape: a plain number, added to the counter at each scrape. */
  handOffs = 0;
  readonly frontHandOffs = new Counter({
    name: "llmgw_gateway_front_handoffs_total",
    help: "Connections the gateway's front gave to the general HTTP server, for a request that is not an OpenAI POST with a known length (GET /v1/models, the admin API, a chunked body, Expect: 100-continue)",
    registers: [this.registry],
    collect: () => {
      this.frontHandOffs.inc(this.handOffs);
      this.handOffs = 0;
    },
  });

  readonly #byModel = new Map<string, ModelCounts>();

  /** The model's children and counts, cached: names come from the catalog (or "unknown"), so the cache is bounded as the labels are. */
  model(name: string): ModelMetrics {
    let found = this.#byModel.get(name);
    if (!found) {
      found = new ModelCounts(this, name);
      this.#byModel.set(name, found);
    }
    return found;
  }

  /** Replica gauges follow the table; called on every swap, never per request. */
  observeTable(snapshot: RoutingSnapshot): void {
    this.replicas.reset();
    for (const model of snapshot.table.models) {
      let ready = 0;
      let draining = 0;
      for (const replica of model.replicas) {
        if (replica.state === "ready") ready += 1;
        else draining += 1;
      }
      this.replicas.set({ model: model.name, state: "ready" }, ready);
      this.replicas.set({ model: model.name, state: "draining" }, draining);
    }
    this.tableRevision.set(snapshot.revision);
  }
}

class ModelCounts implements ModelMetrics {
  readonly latency: HistogramSeries;
  readonly timeToFirstToken: HistogramSeries;
  inFlight = 0;
  /** Tokens since the last scrape. */
  pendingTokensIn = 0;
  pendingTokensOut = 0;
  /** Answers by status since the last scrape. */
  readonly pendingAnswers = new Map<number, number>();

  constructor(metrics: GatewayMetrics, name: string) {
    this.latency = metrics.latency.series(name);
    this.timeToFirstToken = metrics.timeToFirstToken.series(name);
  }

  answered(status: number): void {
    this.pendingAnswers.set(status, (this.pendingAnswers.get(status) ?? 0) + 1);
  }

  countTokens(promptTokens: number, completionTokens: number): void {
    this.pendingTokensIn += promptTokens;
    this.pendingTokensOut += completionTokens;
  }
}
