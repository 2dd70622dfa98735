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

  #promptTokens = 0;
  #promptSeconds = 0;
  #predictedTokens = 0;
  #predictedSeconds = 0;

  /** One request's prompt and generation, with the time each took. */
  record(prompt: { tokens: number; seconds: number }, predicted: { tokens: number; seconds: number }): void {
    this.promptTokens.inc(prompt.tokens);
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
