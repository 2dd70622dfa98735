import { request } from "undici";
import type { RoutingModel, RoutingReplica } from "../../protocol/routing-table.js";
import { driverFor } from "../../engines/drivers/index.js";
import type { EngineDriver } from "../../engines/driver.js";

/**
 * How often each replica of a model routed by cache has its metrics read.
 * llm-d's scheduler reads its model servers as often; a second is what a
 * prompt's prefill takes on a busy card, so a fuller cache shows before many
 * more requests are sent its way.
 */
export const cacheUseReadIntervalMs = 1_000;

/** A reading older than this is forgotten: a replica whose metrics stopped answering counts as empty, as one never read. */
const staleAfterMs = 5 * cacheUseReadIntervalMs;

interface Reading {
  readonly use: number;
  readonly at: number;
}

interface Watched {
  readonly endpoint: string;
  readonly apiKey: string | undefined;
  readonly driver: EngineDriver;
}

/**
 * Each engine's KV cache use (0 to 1), read by this gateway from the engine's
 * own metrics (vLLM's kv_cache_usage_perc, SGLang's token_usage, llama.cpp's
 * kv_cache_usage_ratio, TensorRT-LLM's kv_cache_utilization), for the
 * replicas of models routed by cache. The gateway reads them itself rather
 * than through the control plane: a heartbeat's reading would be seconds old
 * and would rebuild the routing table every time a cache filled a little.
 *
 * Every gateway reads every such replica once a second: one small GET each,
 * off the request path. A replica it cannot read counts as empty, so a
 * metrics outage never takes requests away from a replica.
 */
export class EngineCacheUse {
  readonly #watched = new Map<string, Watched>();
  readonly #readings = new Map<string, Reading>();
  readonly #timer: NodeJS.Timeout;
  #reading = false;

  constructor(private readonly now: () => number = Date.now) {
    this.#timer = setInterval(() => void this.readAll(), cacheUseReadIntervalMs);
    this.#timer.unref();
  }

  /** The replica's cache use as last read, when read within the last few seconds. */
  use(replica: RoutingReplica): number | undefined {
    const reading = this.#readings.get(replica.id);
    return reading !== undefined && this.now() - reading.at <= staleAfterMs ? reading.use : undefined;
  }

  /** Watches the ready replicas of the table's models routed by cache, and forgets the rest. */
  retain(models: readonly RoutingModel[]): void {
    const wanted = new Map<string, Watched>();
    for (const model of models) {
      if (model.routing !== "cache" || model.engine === null || model.engine === "comfyui") continue;
      const driver = driverFor(model.engine);
      for (const replica of model.replicas) wanted.set(replica.id, { endpoint: replica.endpoint, apiKey: replica.api_key, driver });
    }
    for (const id of this.#watched.keys()) {
      if (!wanted.has(id)) {
        this.#watched.delete(id);
        this.#readings.delete(id);
      }
    }
    for (const [id, watched] of wanted) this.#watched.set(id, watched);
  }

  /** One round of reads; a round still running when the next is due is not doubled. */
  async readAll(): Promise<void> {
    if (this.#reading || this.#watched.size === 0) return;
    this.#reading = true;
    try {
      await Promise.all([...this.#watched].map(([id, watched]) => this.#read(id, watched)));
    } finally {
      this.#reading = false;
    }
  }

  close(): void {
    clearInterval(this.#timer);
  }

  async #read(id: string, watched: Watched): Promise<void> {
    try {
      const answer = await request(`${watched.endpoint}${watched.driver.metricsPath}`, {
        headers: watched.apiKey === undefined ? {} : { authorization: `Bearer ${watched.apiKey}` },
        signal: AbortSignal.timeout(cacheUseReadIntervalMs),
      });
      const text = await answer.body.text();
      if (answer.statusCode !== 200) return;
      const use = watched.driver.parseMetrics(text).kvCacheUsage;
      // The replica may have left the table while its answer was on the way.
      if (use !== undefined && Number.isFinite(use) && this.#watched.has(id)) this.#readings.set(id, { use: Math.min(1, Math.max(0, use)), at: this.now() });
    } catch {
      // Unreadable for now: the reading ages out, and the replica counts as empty.
    }
  }
}
