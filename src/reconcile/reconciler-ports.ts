import type { CatalogModel } from "../catalog/index.js";
import type { ModelFacts } from "../plan/index.js";
import type { NodeView } from "../protocol/index.js";

/** What the reconciler needs of the fleet: the views, and starts and stops through the agents. */
export interface ReconcilerFleet {
  listNodes(): Promise<NodeView[]>;
  /** The next moment a node's state changes with no beat (a deadline passes, the settling window closes); undefined: none ahead. */
  nextNodeStateChangeMs(nodes: readonly NodeView[]): number | undefined;
  /** `simulation`: the planner's figures a simulated engine times itself by (real engines ignore them). */
  startPlaced(
    placement: { model: string; profile: string; node: string; cards: readonly number[]; canary?: { readonly revision: string }; members?: readonly { readonly node: string; readonly cards: readonly number[] }[] },
    simulation?: { readonly weights_bytes_per_card?: number },
  ): Promise<string>;
  resumeStart(id: string): Promise<void>;
  stopReplica(id: string, drain: boolean): Promise<unknown>;
}

export interface ReconcilerCatalog {
  list(): Promise<CatalogModel[]>;
}

export interface ReconcilerLog {
  info(facts: Record<string, unknown>, message: string): void;
  warn(facts: Record<string, unknown>, message: string): void;
}

/**
 * A model's figures as the planner read them from its files. The reconciler
 * asks and never reads: reading (in the background, a few sources at a
 * time) is the model-facts service's.
 */
export interface ReconcilerFacts {
  /** The figures when known; undefined until they are (asking queues a read). */
  get(source: string): ModelFacts | undefined;
  /** The figures, waiting up to `withinMs` for a read under way; undefined when unreadable or slower. */
  whenRead(source: string, withinMs: number): Promise<ModelFacts | undefined>;
  /** A read of the source is queued or under way: its figures may come in a moment (the reconciler is woken when they do). */
  reading(source: string): boolean;
}
