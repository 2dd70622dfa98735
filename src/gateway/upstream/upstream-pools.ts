import { Pool } from "undici";
import { Http1Pool } from "./http1-pool.js";
import type { UpstreamDispatcher } from "./upstream-dispatcher.js";

/**
 * The connections to each upstream origin, kept alive and reused across
 * requests, which is most of what a proxy's latency is. Plain-HTTP origins
 * (engines on the cluster's network) get the gateway's own lean HTTP/1.1
 * pool; https origins (external providers) get undici's, with TLS. Pools of
 * origins that left the routing table are closed once their requests have
 * finished.
 */
export class UpstreamPools {
  readonly #pools = new Map<string, UpstreamDispatcher>();

  constructor(private readonly connections = 128) {}

  get(origin: string): UpstreamDispatcher {
    let pool = this.#pools.get(origin);
    if (!pool) {
      pool = this.#make(new URL(origin));
      this.#pools.set(origin, pool);
    }
    return pool;
  }

  #make(origin: URL): UpstreamDispatcher {
    if (origin.protocol === "http:") return new Http1Pool(origin, { connections: this.connections, connectTimeoutMs: 5_000 });
    return new Pool(origin, {
      connections: this.connections,
      // Engines answer slowly on long generations: no timeout on the body as a whole,
      // but a connection that cannot even be opened is a retryable failure soon.
      connectTimeout: 5_000,
      headersTimeout: 0,
      bodyTimeout: 0,
      keepAliveTimeout: 30_000,
    });
  }

  /** Closes the pools of origins not in `keep`, after their requests finish. */
  retain(keep: ReadonlySet<string>): void {
    for (const [origin, pool] of this.#pools) {
      if (keep.has(origin)) continue;
      this.#pools.delete(origin);
      void pool.close().catch(() => undefined);
    }
  }

  async close(): Promise<void> {
    const pools = [...this.#pools.values()];
    this.#pools.clear();
    await Promise.all(pools.map((pool) => pool.close().catch(() => undefined)));
  }
}
