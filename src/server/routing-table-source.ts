import { isDeepStrictEqual } from "node:util";
import { cacheRoutingOnWire, type CacheRoutingWeights } from "../catalog/cache-routing.js";
import type { RoutingTable } from "../protocol/routing-table.js";
import { buildRoutingTable, loadingEtas, type PlacementForRouting, type ReplicaForRouting } from "./build-routing-table.js";
import type { CatalogService } from "../services/catalog-service.js";
import type { FleetService } from "../services/fleet-service.js";

/** How often a table that shows a loading estimate is rebuilt when nothing else changed. */
export const loadingEstimateRefreshMs = 5_000;

/**
 * The server's routing table, rebuilt off the request path from the catalog
 * and the fleet every `intervalMs` (and on demand after a change this server
 * made), and published only when it changed, with a higher revision. The
 * gateways (the server's own /v1, and `llmgw gateway` processes long-polling
 * GET /api/v1/routing) swap it in whole.
 *
 * Revisions start at the server's start time in milliseconds, so a gateway
 * that followed a server before its restart sees the new server's tables as
 * newer rather than waiting for the old count to be passed.
 */
export class RoutingTableSource {
  #table: RoutingTable;
  #timer: NodeJS.Timeout | undefined;
  #building: Promise<void> | undefined;
  #builtFrom: string | undefined;
  #built: BuiltTable | undefined;
  #showsLoading = false;
  readonly #listeners = new Set<(table: RoutingTable) => void>();

  constructor(
    private readonly catalog: CatalogService,
    private readonly fleet: FleetService | undefined,
    private readonly onFailure: (error: unknown) => void,
    private readonly intervalMs = 500,
    /** The traffic share of each model's running canary, in percent. */
    private readonly canaryWeights: () => Promise<ReadonlyMap<string, number>> = async () => new Map(),
    /** The reconciler's latest placement decision of each model, read here so the gateway never asks the store. */
    private readonly placements: () => Promise<ReadonlyMap<string, PlacementForRouting>> = async () => new Map(),
    /** server.yaml's `gateway.cache_routing`, handed to every gateway with the table. */
    private readonly cacheRouting?: CacheRoutingWeights,
  ) {
    this.#table = { revision: Date.now(), models: [], aliases: {} };
  }

  get current(): RoutingTable {
    return this.#table;
  }

  async start(): Promise<void> {
    await this.refresh();
    const tick = () => {
      this.#timer = setTimeout(() => void this.refresh().finally(() => this.#timer !== undefined && tick()), this.intervalMs);
      this.#timer.unref();
    };
    tick();
  }

  stop(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    for (const listener of this.#listeners) listener(this.#table);
  }

  /** Rebuilds now; concurrent calls share one build. */
  refresh(): Promise<void> {
    this.#building ??= this.#build().finally(() => (this.#building = undefined));
    return this.#building;
  }

  subscribe(listener: (table: RoutingTable) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** The table once its revision is past `after`, or the current one after `timeoutMs` (a long poll). */
  async after(after: number, timeoutMs: number, signal: AbortSignal): Promise<RoutingTable> {
    if (this.#table.revision > after) return this.#table;
    return await new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        unsubscribe();
        signal.removeEventListener("abort", done);
        resolve(this.#table);
      };
      const unsubscribe = this.subscribe(done);
      const timer = setTimeout(done, timeoutMs);
      signal.addEventListener("abort", done, { once: true });
    });
  }

  /**
   * What the table is built from, as a key, and the canary weights read for
   * it. Reading the fleet whole every 500 ms (every node with its inventory,
   * every replica) took 25 of 205 profiled seconds of a 500-node server while
   * nothing changed; the key costs a few small reads. It
   * is read before the data, so a change landing in between gives newer
   * data under an older key, which the next tick rebuilds, never the reverse.
   */
  async #inputs(): Promise<{ readonly key: string; readonly clock: string; readonly weights: ReadonlyMap<string, number> }> {
    const [snapshot, fleetKey, weights] = await Promise.all([this.catalog.snapshot(), this.fleet?.viewKey(), this.canaryWeights()]);
    // A loading replica's estimate moves with the clock alone: while one is shown, it is refreshed every few seconds.
    const clock = this.#showsLoading ? `|${Math.floor(Date.now() / loadingEstimateRefreshMs)}` : "";
    return { key: `${snapshot.revision}|${fleetKey?.key ?? ""}|${[...weights].join(",")}`, clock, weights };
  }

  async #build(): Promise<void> {
    try {
      // The weights are part of the key, and the ones read for it are the ones built with.
      const { key, clock, weights } = await this.#inputs();
      if (`${key}${clock}` === this.#builtFrom) return;
      if (key === this.#built?.key && this.fleet) {
        await this.#refreshEstimates(this.#built, this.fleet);
      } else {
        const [models, replicas, placements] = await Promise.all([this.catalog.list(), this.fleet?.routingReplicas() ?? Promise.resolve([]), this.placements()]);
        const built = buildRoutingTable(models, replicas, weights, placements);
        const content = this.cacheRouting === undefined ? built : { ...built, cache_routing: cacheRoutingOnWire(this.cacheRouting) };
        this.#built = { key, replicas, content };
        const { revision: _revision, ...held } = this.#table;
        if (!isDeepStrictEqual(held, content)) this.#publish(content);
      }
      this.#builtFrom = `${key}${clock}`;
      this.#showsLoading = this.#table.models.some((model) => model.loading_eta_s !== undefined);
    } catch (error) {
      // The last good table stays in force: a database hiccup must not empty the gateway.
      this.onFailure(error);
    }
  }

  /**
   * Only the clock or a fetch's progress moved since the last build: only the
   * loading estimates can differ, so only they are worked out again, from
   * each fetch's progress as its column has it now. Building the whole table
   * for them read and compared every replica and model (a tenth of a second
   * at 5,000 models) every few seconds while any replica was fetching.
   */
  async #refreshEstimates(built: BuiltTable, fleet: FleetService): Promise<void> {
    const progressNow = await fleet.replicaProgressNow();
    const replicas = built.replicas.map((replica) => {
      const progress = progressNow.get(replica.id);
      return progress !== undefined && !isDeepStrictEqual(progress, replica.progress) ? { ...replica, progress } : replica;
    });
    const etas = loadingEtas(replicas, Date.now());
    const models = built.content.models.map((model) => {
      const eta = etas.get(model.name);
      if (eta === (model.loading_eta_s ?? undefined)) return model;
      const { loading_eta_s: _was, ...rest } = model;
      return eta === undefined ? rest : { ...rest, loading_eta_s: eta };
    });
    // A model whose estimate moved is a new object; the rest are the ones built.
    const moved = models.some((model, index) => model !== built.content.models[index]);
    const content = { ...built.content, models };
    this.#built = { key: built.key, replicas, content };
    if (moved) this.#publish(content);
  }

  #publish(content: TableContent): void {
    this.#table = { revision: Math.max(this.#table.revision + 1, Date.now()), ...content };
    for (const listener of this.#listeners) listener(this.#table);
  }
}

type TableContent = Omit<RoutingTable, "revision">;

/** The last whole build: its key (without the clock), the replicas it read, and what it built. */
interface BuiltTable {
  readonly key: string;
  readonly replicas: readonly ReplicaForRouting[];
  readonly content: TableContent;
}
