import { Counter, Gauge, Registry } from "prom-client";

/**
 * The built-in engine's /metrics under llama-server's own names, so the
 * llamacpp driver reads both engines alike and an operator's dashboards for
 * llama-server keep working.
 */
export class LlamaMetrics {
  readonly registry = new Registry();
  readonly promptTokens = new Counter({ name: "llamacpp:prompt_tokens_total", help: "Number of prompt tokens processed.", registers: [this.registry] });
  readonly promptSeconds = new Counter({ name: "llamacpp:prompt_seconds_total", help: "Prompt process time", registers: [this.registry] });
  readonly predictedTokens = new Counter({ name: "llamacpp:tokens_predicted_total", help: "Number of generation tokens processed.", registers: [this.registry] });
  readonly predictedSeconds = new Counter({ name: "llamacpp:tokens_predicted_seconds_total", help: "Predict process time", registers: [this.registry] });
  readonly decodes = new Counter({ name: "llamacpp:n_decode_total", help: "Total number of llama_decode() calls", registers: [this.registry] });
  readonly promptRate = new Gauge({ name: "llamacpp:prompt_tokens_seconds", help: "Average prompt throughput in tokens/s.", registers: [this.registry] });
  readonly predictedRate = new Gauge({ name: "llamacpp:predicted_tokens_seconds", help: "Average generation throughput in tokens/s.", registers: [this.registry] });
  readonly processing = new Gauge({ name: "llamacpp:requests_processing", help: "Number of requests processing.", registers: [this.registry] });
  readonly deferred = new Gauge({ name: "llamacpp:requests_deferred", help: "Number of requests deferred.", registers: [this.registry] });
  // Not llama-server's: the prompt cache's effect, counted apart so a dashboard can show the share reused.
  readonly promptTokensCached = new Counter({ name: "llamacpp:prompt_tokens_cached_total", help: "Number of prompt tokens reused from a slot's cache, not evaluated again.", registers: [this.registry] });
  readonly promptTokensEvaluated = new Counter({ name: "llamacpp:prompt_tokens_evaluated_total", help: "Number of prompt tokens evaluated (the prompt less what the cache held).", registers: [this.registry] });
  /** Set when /metrics is read; the gateway's cache-aware routing reads it, as llama-server names it. */
  readonly kvCacheUsage = new Gauge({ name: "llamacpp:kv_cache_usage_ratio", help: "KV-cache usage. 1 means 100 percent usage.", registers: [this.registry] });
  readonly kvCacheTokens = new Gauge({ name: "llamacpp:kv_cache_tokens", help: "KV-cache tokens.", registers: [this.registry] });

  #promptTokens = 0;
  #promptSeconds = 0;
  #predictedTokens = 0;
  #predictedSeconds = 0;

  /**
   * One request's prompt and generation, with the time each took. As in
   * llama-server, the prompt's tokens counted are those evaluated; `cached`
   * are those the slot's cache held.
   */
  record(prompt: { tokens: number; cached?: number; seconds: number }, predicted: { tokens: number; seconds: number }): void {
    this.promptTokens.inc(prompt.tokens);
    this.promptTokensEvaluated.inc(prompt.tokens);
    this.promptTokensCached.inc(prompt.cached ?? 0);
    this.promptSeconds.inc(prompt.seconds);
    this.predictedTokens.inc(predicted.tokens);
    this.predictedSeconds.inc(predicted.seconds);
    this.decodes.inc(1 + Math.max(0, predicted.tokens - 1));
    this.#promptTokens += prompt.tokens;
    this.#promptSeconds += prompt.seconds;
    this.#predictedTokens += predicted.tokens;
    this.#predictedSeconds += predicted.seconds;
    if (this.#promptSeconds > 0) this.promptRate.set(this.#promptTokens / this.#promptSeconds);
    if (this.#predictedSeconds > 0) this.predictedRate.set(this.#predictedTokens / this.#predictedSeconds);
  }
}
