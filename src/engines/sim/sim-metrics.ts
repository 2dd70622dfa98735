import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { EngineName } from "../../catalog/index.js";

/** What the gauges read at scrape time. */
export interface SimLoad {
  readonly running: number;
  readonly waiting: number;
  /** 0..1 */
  readonly kvCacheUsage: number;
}

/** The llama.cpp counters carry no labels; the others carry the model's name. */
interface LabelledCounter {
  readonly counter: Counter;
  readonly labelled: boolean;
}

// vLLM's own bucket boundaries, so dashboards built for vLLM read the simulation the same way.
const timeToFirstTokenBuckets = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];
const endToEndBuckets = [0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60];

/**
 * The simulated engine's metrics, in registries of its own (never
 * prom-client's global one: tests run several engines in one process).
 *
 * /metrics always carries vLLM's names. It also carries the names
 * of the engine being simulated where they differ (SGLang, llama-server), and
 * trtllm-serve's go to /prometheus/metrics, so each driver's parseMetrics
 * reads the simulation at its metricsPath exactly as it reads the real engine.
 */
export class SimMetrics {
  readonly registry = new Registry();
  /** trtllm-serve's /prometheus/metrics. */
  readonly trtllmRegistry = new Registry();
  readonly #promptTokens: LabelledCounter[] = [];
  readonly #generationTokens: LabelledCounter[] = [];
  readonly #timeToFirstToken: Histogram[] = [];
  readonly #endToEnd: Histogram[] = [];
  readonly #success: Counter[] = [];
  readonly #labels: { model_name: string };

  constructor(engine: EngineName, modelName: string, load: () => SimLoad) {
    this.#labels = { model_name: modelName };
    const labels = this.#labels;
    const gauge = (registry: Registry, name: string, help: string, read: (current: SimLoad) => number, labelled = true) =>
      new Gauge({
        name,
        help,
        labelNames: labelled ? ["model_name"] : [],
        registers: [registry],
        collect(this: Gauge) {
          if (labelled) this.set(labels, read(load()));
          else this.set(read(load()));
        },
      });
    const counter = (registry: Registry, name: string, help: string, labelled = true): LabelledCounter => ({
      counter: new Counter({ name, help, labelNames: labelled ? ["model_name"] : [], registers: [registry] }),
      labelled,
    });
    const histogram = (registry: Registry, name: string, help: string, buckets: number[]) =>
      new Histogram({ name, help, labelNames: ["model_name"], buckets, registers: [registry] });

    const vllm = this.registry;
    gauge(vllm, "vllm:num_requests_running", "Number of requests in model execution batches.", (current) => current.running);
    gauge(vllm, "vllm:num_requests_waiting", "Number of requests waiting to be processed.", (current) => current.waiting);
    gauge(vllm, "vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", (current) => current.kvCacheUsage);
    gauge(vllm, "vllm:gpu_cache_usage_perc", "GPU KV-cache usage (vLLM V0 name). 1 means 100 percent usage.", (current) => current.kvCacheUsage);
    this.#promptTokens.push(counter(vllm, "vllm:prompt_tokens_total", "Number of prefill tokens processed."));
    this.#generationTokens.push(counter(vllm, "vllm:generation_tokens_total", "Number of generation tokens processed."));
    this.#success.push(new Counter({ name: "vllm:request_success_total", help: "Count of successfully processed requests.", labelNames: ["model_name", "finished_reason"], registers: [vllm] }));
    this.#timeToFirstToken.push(histogram(vllm, "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", timeToFirstTokenBuckets));
    this.#endToEnd.push(histogram(vllm, "vllm:e2e_request_latency_seconds", "Histogram of end to end request latency in seconds.", endToEndBuckets));

    if (engine === "sglang") {
      gauge(vllm, "sglang:num_running_reqs", "The number of running requests.", (current) => current.running);
      gauge(vllm, "sglang:num_queue_reqs", "The number of requests in the waiting queue.", (current) => current.waiting);
      gauge(vllm, "sglang:token_usage", "The token usage.", (current) => current.kvCacheUsage);
      this.#promptTokens.push(counter(vllm, "sglang:prompt_tokens_total", "Number of prefill tokens processed."));
      this.#generationTokens.push(counter(vllm, "sglang:generation_tokens_total", "Number of generation tokens processed."));
    }
    if (engine === "llamacpp") {
      // llama-server labels nothing.
      gauge(vllm, "llamacpp:requests_processing", "Number of requests processing.", (current) => current.running, false);
      gauge(vllm, "llamacpp:requests_deferred", "Number of requests deferred.", (current) => current.waiting, false);
      gauge(vllm, "llamacpp:kv_cache_usage_ratio", "KV-cache usage. 1 means 100 percent usage.", (current) => current.kvCacheUsage, false);
      this.#promptTokens.push(counter(vllm, "llamacpp:prompt_tokens_total", "Number of prompt tokens processed.", false));
      this.#generationTokens.push(counter(vllm, "llamacpp:tokens_predicted_total", "Number of generation tokens processed.", false));
    }
    if (engine === "trtllm") {
      const trtllm = this.trtllmRegistry;
      gauge(trtllm, "trtllm_kv_cache_utilization", "KV cache utilization.", (current) => current.kvCacheUsage);
      this.#timeToFirstToken.push(histogram(trtllm, "trtllm_time_to_first_token_seconds", "Time to first token.", timeToFirstTokenBuckets));
      this.#endToEnd.push(histogram(trtllm, "trtllm_e2e_request_latency_seconds", "End-to-end request latency.", endToEndBuckets));
    }
  }

  recordPromptTokens(count: number): void {
    for (const counter of this.#promptTokens) this.#increment(counter, count);
  }

  recordGenerationTokens(count: number): void {
    for (const counter of this.#generationTokens) this.#increment(counter, count);
  }

  recordTimeToFirstToken(seconds: number): void {
    for (const histogram of this.#timeToFirstToken) histogram.observe(this.#labels, seconds);
  }

  recordFinished(seconds: number, finishReason: string): void {
    for (const histogram of this.#endToEnd) histogram.observe(this.#labels, seconds);
    for (const counter of this.#success) counter.inc({ ...this.#labels, finished_reason: finishReason });
  }

  #increment({ counter, labelled }: LabelledCounter, count: number): void {
    if (count <= 0) return;
    if (labelled) counter.inc(this.#labels, count);
    else counter.inc(count);
  }
}
