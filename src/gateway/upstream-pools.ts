import { Pool } from "undici";

/**
 * One undici Pool per upstream origin: connections are kept alive
 * and reused across requests, which is most of what a proxy's latency is.
 * Pools of origins that left the routing table are closed once their
 * requests have finished.
 */
export class UpstreamPools {
  readonly #pools = new Map<string, Pool>();

  constructor(private readonly connections = 128) {}

  get(origin: string): Pool {
    let pool = this.#pools.get(origin);
    if (!pool) {
      pool = new Pool(origin, {
        connections: this.connections,
        // Engines answer slowly on long generations: no timeout on the body as a whole,
        // but a connection that cannot even be opened is a retryable failure soon.
        connectTimeout: 5_000,
        headersTimeout: 0,
        bodyTimeout: 0,
        keepAliveTimeout: 30_000,
      });
      this.#pools.set(origin, pool);
    }
    return pool;
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
