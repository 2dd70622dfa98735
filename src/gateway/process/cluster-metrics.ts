import { AggregatorRegistry, type Registry } from "prom-client";
import { metricsAnswerSchema } from "../../protocol/index.js";
import type { PrimaryChannel } from "./ipc-shared-limits.js";

/** Longer than prom-client's own 5 s for gathering from the workers, so its error (naming the cause) arrives first. */
const answerTimeoutMs = 6000;

/**
 * /metrics of a gateway worker: a scrape reaches whichever worker the
 * primary hands the connection to, and one worker's counters are a share of
 * the gateway's. So the scraped worker asks the primary, which gathers every
 * worker's registry (prom-client's cluster support) and sums them: counters
 * and histograms add up, the table's gauges take the largest.
 */
export class ClusterMetrics {
  #next = 0;
  readonly #waiting = new Map<number, { resolve: (text: string) => void; reject: (error: Error) => void }>();

  /** `local` is this worker's registry, the one the primary's gathering reads. */
  constructor(
    private readonly channel: PrimaryChannel,
    local: Registry,
  ) {
    AggregatorRegistry.setRegistries([local]);
    // Constructing one installs prom-client's answer to the primary's gathering requests in this worker.
    new AggregatorRegistry();
    channel.onMessage((message) => this.#receive(message));
  }

  text(): Promise<string> {
    const id = this.#next;
    this.#next = (this.#next + 1) % Number.MAX_SAFE_INTEGER;
    return new Promise<string>((resolve, reject) => {
      if (!this.channel.connected) {
        reject(new Error("the gateway's primary process is gone; the workers' metrics cannot be gathered"));
        return;
      }
      const timer = setTimeout(() => {
        this.#waiting.delete(id);
        reject(new Error(`the gateway's primary did not gather the workers' metrics within ${answerTimeoutMs / 1000} s`));
      }, answerTimeoutMs);
      this.#waiting.set(id, {
        resolve: (text) => {
          clearTimeout(timer);
          resolve(text);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      });
      this.channel.send({ type: "llmgw-metrics-request", id });
    });
  }

  #receive(message: unknown): void {
    const parsed = metricsAnswerSchema.safeParse(message);
    if (!parsed.success) return;
    const waiting = this.#waiting.get(parsed.data.id);
    if (!waiting) return;
    this.#waiting.delete(parsed.data.id);
    if (parsed.data.text !== null) waiting.resolve(parsed.data.text);
    else waiting.reject(new Error(`the gateway's primary could not gather the workers' metrics: ${parsed.data.error ?? "no reason given"}`));
  }
}
