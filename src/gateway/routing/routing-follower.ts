import { request } from "undici";
import { readErrorBody, routingLongPollMs, routingTableSchema, type RoutingTable } from "../../protocol/index.js";
import type { GatewayLog } from "../wire/gateway-exchange.js";

export interface RoutingFollowerOptions {
  /** The server's base URL. */
  readonly server: string;
  /** An admin token: the table carries replica keys. */
  readonly token: string;
  readonly onTable: (table: RoutingTable) => void;
  readonly log: GatewayLog;
}

/** Waits between failed polls: quick at first (a server restart), then no faster than this. */
const maxBackoffMs = 5_000;

/**
 * Follows the server's routing table for a standalone gateway: GET
 * /api/v1/routing?after=REVISION, held open by the server until the table
 * changes, then again with the new revision. While the server cannot be
 * reached the last table stays in force, so the gateway keeps serving what
 * runs.
 */
export class RoutingFollower {
  readonly #stop = new AbortController();
  #revision = -1;
  #loop: Promise<void> | undefined;

  constructor(private readonly options: RoutingFollowerOptions) {}

  /** Fetches the first table (so the gateway starts with one), then follows in the background. */
  async start(): Promise<void> {
    const first = await this.#fetch(undefined);
    this.#accept(first);
    this.#loop = this.#follow();
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#loop;
  }

  #accept(table: RoutingTable): void {
    if (table.revision <= this.#revision) return;
    this.#revision = table.revision;
    this.options.onTable(table);
  }

  async #follow(): Promise<void> {
    let backoffMs = 250;
    let failing = false;
    while (!this.#stop.signal.aborted) {
      try {
        this.#accept(await this.#fetch(this.#revision));
        if (failing) this.options.log.warn({ server: this.options.server, revision: this.#revision }, "routing-table-followed-again");
        failing = false;
        backoffMs = 250;
      } catch (error) {
        // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- stop may have come during the wait
        if (this.#stop.signal.aborted) return;
        if (!failing) this.options.log.warn({ server: this.options.server, error: (error as Error).message }, "routing-table-unreachable: serving from the last table");
        failing = true;
        await new Promise((resolve) => setTimeout(resolve, backoffMs).unref());
        backoffMs = Math.min(maxBackoffMs, backoffMs * 2);
      }
    }
  }

  async #fetch(after: number | undefined): Promise<RoutingTable> {
    const url = new URL("/api/v1/routing", this.options.server);
    if (after !== undefined) url.searchParams.set("after", String(after));
    const answer = await request(url, {
      headers: { authorization: `Bearer ${this.options.token}` },
      signal: this.#stop.signal,
      headersTimeout: routingLongPollMs + 10_000,
      bodyTimeout: routingLongPollMs + 10_000,
    });
    const text = await answer.body.text();
    if (answer.statusCode !== 200) {
      const body = readErrorBody(text);
      throw new Error(`GET ${url.pathname} answered ${answer.statusCode}${body ? `: ${body.message}` : ""}`);
    }
    return routingTableSchema.parse(JSON.parse(text));
  }
}
