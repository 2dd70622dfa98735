import type { RoutingReplica } from "../../protocol/index.js";
import { UpstreamError } from "../wire/upstream-error.js";

/**
 * How long an endpoint that refused a connection is passed over. A killed
 * engine stays in the routing table until its agent reports it (one
 * heartbeat, 2 s) and the table follows (within a second); 5 s outlasts
 * that, so the gateway stops sending to the dead endpoint at its first
 * refusal rather than at the table's next revision. Longer would keep an
 * endpoint that failed once for a passing reason (an engine restarted in
 * place, a reset by a network blip) out of rotation for no gain: the table
 * has decided about it by then.
 */
export const ejectForMs = 5_000;

interface Ejection {
  /** The endpoint that failed: a replica given a new one (its engine started again elsewhere) is not held back by the old one's failure. */
  readonly endpoint: string;
  /** On the clock passed in; from then on the endpoint is chosen again. */
  readonly until: number;
}

export interface EjectedEndpointsOptions {
  /** Milliseconds on a clock that only moves forward: performance.now in production, a test's own. */
  readonly now?: () => number;
  readonly ejectForMs?: number;
}

/**
 * Passive outlier ejection, as Envoy's: a replica's endpoint whose attempt
 * failed in a way only a dead engine fails (refused, reset before any answer,
 * a connect timeout: `UpstreamError.endpointGone`) is skipped by the replica
 * choice for `ejectForMs`, so the requests that follow do not each pay a
 * refused connect before their retry. An engine's HTTP error (a 500, a 503)
 * never ejects: the engine is up and answering. Nor does a client's abort.
 *
 * Per gateway process, in memory: each `llmgw gateway` worker learns of a
 * dead endpoint from its own first refusal. No timer runs; an ejection is a
 * timestamp compared when a replica is chosen, and expired ones are dropped
 * then, so nothing keeps a process alive or grows without bound.
 */
export class EjectedEndpoints {
  readonly #now: () => number;
  readonly #ejectForMs: number;
  /** By replica id. */
  readonly #ejections = new Map<string, Ejection>();

  constructor(options: EjectedEndpointsOptions = {}) {
    this.#now = options.now ?? (() => performance.now());
    this.#ejectForMs = options.ejectForMs ?? ejectForMs;
  }

  /**
   * Takes note of a failed attempt on the replica: ejects its endpoint when
   * the failure says the engine is gone. True when this failure ejected it
   * (it was not ejected already), for the ejections counter; a further
   * failure while ejected (the panic choice tried it again) extends it.
   */
  noteFailure(replica: RoutingReplica, error: unknown): boolean {
    if (!(error instanceof UpstreamError) || !error.endpointGone) return false;
    const now = this.#now();
    this.#dropExpired(now);
    const already = this.isEjected(replica);
    this.#ejections.set(replica.id, { endpoint: replica.endpoint, until: now + this.#ejectForMs });
    return !already;
  }

  /** True while the replica's endpoint is ejected. Bound, for ReplicaChoice's `ejected`. */
  readonly isEjected = (replica: RoutingReplica): boolean => {
    // The path of every request: nothing ejected costs one size check, not a clock read.
    if (this.#ejections.size === 0) return false;
    const ejection = this.#ejections.get(replica.id);
    if (ejection === undefined) return false;
    if (ejection.endpoint !== replica.endpoint || ejection.until <= this.#now()) {
      this.#ejections.delete(replica.id);
      return false;
    }
    return true;
  };

  /** A replica that left the table is never looked up again: its entry goes once its time is up. */
  #dropExpired(now: number): void {
    for (const [id, ejection] of this.#ejections) if (ejection.until <= now) this.#ejections.delete(id);
  }
}
