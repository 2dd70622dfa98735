import type { RoutingModel, RoutingReplica } from "../../protocol/index.js";
import { UpstreamError } from "../wire/upstream-error.js";
import { UpstreamPools } from "../upstream/upstream-pools.js";
import type { UpstreamDispatcher } from "../upstream/upstream-dispatcher.js";
import type { GatewayEndpoint } from "../wire/gateway-exchange.js";

/** One upstream as the request path uses it, made once per routing table. */
export interface UpstreamRoute {
  readonly pool: UpstreamDispatcher;
  readonly paths: Readonly<Record<GatewayEndpoint, string>>;
  /** The header value, with the replica's or provider's key; never logged. */
  readonly authorization: string | undefined;
  /** "replica ID" or "external NAME", for errors and logs. */
  readonly upstream: string;
  readonly refusedKeyVariable: string | undefined;
}

/** Where each replica and external model of the table in force is reached: made once per table, not per request. */
export class UpstreamRoutes {
  readonly #pools = new UpstreamPools();
  #replicaRoutes = new WeakMap<RoutingReplica, UpstreamRoute>();
  #externalRoutes = new WeakMap<RoutingModel, UpstreamRoute>();

  /** @param environment where external models' keys are read from, by the variable the catalog names. */
  constructor(private readonly environment: Readonly<Record<string, string | undefined>>) {}

  /** A new table is in force: pools of origins it no longer names close, and its routes are made anew. */
  retain(models: readonly RoutingModel[]): void {
    const origins = new Set<string>();
    for (const model of models) {
      for (const replica of model.replicas) origins.add(new URL(replica.endpoint).origin);
      if (model.external) origins.add(new URL(model.external.base_url).origin);
    }
    this.#pools.retain(origins);
    this.#replicaRoutes = new WeakMap();
    this.#externalRoutes = new WeakMap();
  }

  replica(replica: RoutingReplica): UpstreamRoute {
    let route = this.#replicaRoutes.get(replica);
    if (!route) {
      const url = new URL(replica.endpoint);
      route = this.#route(url.origin, `${url.pathname.replace(/\/$/, "")}/v1/`, replica.api_key, `replica ${replica.id}`, undefined);
      this.#replicaRoutes.set(replica, route);
    }
    return route;
  }

  external(model: RoutingModel): UpstreamRoute {
    let route = this.#externalRoutes.get(model);
    if (!route) {
      const external = model.external as NonNullable<RoutingModel["external"]>;
      const base = new URL(external.base_url);
      let key: string | undefined;
      if (external.api_key_env !== null) {
        key = this.environment[external.api_key_env];
        if (key === undefined || key === "") {
          // Named by variable, never by value; retryable, so a fallback may still answer.
          throw new UpstreamError(undefined, true, `external ${model.name}`, `the gateway's environment has no ${external.api_key_env} for external model ${model.name}`);
        }
      }
      // A provider's refusal of the key often quotes part of it ("Incorrect API key provided: sk-...abcd"):
      // it is not passed on; the client is told which variable to check. Retryable, so a fallback may answer.
      route = this.#route(base.origin, `${base.pathname.replace(/\/$/, "")}/`, key, `external ${model.name}`, external.api_key_env ?? "(none: api_key_env is not set)");
      this.#externalRoutes.set(model, route);
    }
    return route;
  }

  #route(origin: string, basePath: string, key: string | undefined, upstream: string, refusedKeyVariable: string | undefined): UpstreamRoute {
    return {
      pool: this.#pools.get(origin),
      paths: {
        "chat/completions": `${basePath}chat/completions`,
        completions: `${basePath}completions`,
        embeddings: `${basePath}embeddings`,
        responses: `${basePath}responses`,
        messages: `${basePath}messages`,
        rerank: `${basePath}rerank`,
        score: `${basePath}score`,
      },
      authorization: key === undefined ? undefined : `Bearer ${key}`,
      upstream,
      refusedKeyVariable,
    };
  }

  close(): Promise<void> {
    return this.#pools.close();
  }
}
