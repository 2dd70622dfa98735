import { emptyRoutingTable, type RoutingTable } from "../../protocol/index.js";
import { RoutingSnapshot } from "./routing-snapshot.js";

interface Waiter {
  readonly resolve: (snapshot: RoutingSnapshot) => void;
}

/**
 * The routing table a gateway serves from, swapped in whole, and the requests
 * waiting for a model's first ready replica. A swap that brings one wakes its
 * waiters at once, so a cold start is served the moment the table says so;
 * a swap that says none will come (placement refused the model) wakes them
 * too, so they are answered with the reason rather than at their deadline.
 */
export class RoutingState {
  #snapshot = new RoutingSnapshot(emptyRoutingTable);
  readonly #waiters = new Map<string, Set<Waiter>>();
  readonly #listeners = new Set<(snapshot: RoutingSnapshot) => void>();

  get current(): RoutingSnapshot {
    return this.#snapshot;
  }

  /** Replaces the table; an older revision than the one held is ignored (a late answer of a slow poll). */
  swap(table: RoutingTable): void {
    if (table.revision < this.#snapshot.revision) return;
    const snapshot = new RoutingSnapshot(table);
    this.#snapshot = snapshot;
    for (const [model, waiters] of this.#waiters) {
      // A refusal ends the wait too: the request is answered with placement's reason, not at its deadline.
      if (!snapshot.hasReadyReplica(model) && snapshot.refusal(model) === undefined) continue;
      this.#waiters.delete(model);
      for (const waiter of waiters) waiter.resolve(snapshot);
    }
    for (const listener of this.#listeners) listener(snapshot);
  }

  onSwap(listener: (snapshot: RoutingSnapshot) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  waiting(model: string): number {
    return this.#waiters.get(model)?.size ?? 0;
  }

  /**
   * Resolves with the first snapshot in which `model` has a ready replica or
   * a refusal (`RoutingSnapshot.refusal`), or undefined when `timeoutMs`
   * passes or `signal` aborts first.
   */
  waitForReady(model: string, timeoutMs: number, signal: AbortSignal): Promise<RoutingSnapshot | undefined> {
    if (this.#snapshot.hasReadyReplica(model) || this.#snapshot.refusal(model) !== undefined) return Promise.resolve(this.#snapshot);
    return new Promise((resolve) => {
      let waiters = this.#waiters.get(model);
      if (!waiters) {
        waiters = new Set();
        this.#waiters.set(model, waiters);
      }
      const done = (snapshot: RoutingSnapshot | undefined) => {
        clearTimeout(timer);
        signal.removeEventListener("abort", aborted);
        const set = this.#waiters.get(model);
        set?.delete(waiter);
        if (set?.size === 0) this.#waiters.delete(model);
        resolve(snapshot);
      };
      const waiter: Waiter = { resolve: done };
      const aborted = () => done(undefined);
      const timer = setTimeout(() => done(undefined), timeoutMs);
      signal.addEventListener("abort", aborted, { once: true });
      waiters.add(waiter);
    });
  }
}
