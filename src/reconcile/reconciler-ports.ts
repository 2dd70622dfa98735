import type { CatalogModel } from "../catalog/catalog-model.js";
import type { NodeView } from "../protocol/views.js";

/** What the reconciler needs of the fleet: the views, and starts and stops through the agents. */
export interface ReconcilerFleet {
  listNodes(): Promise<NodeView[]>;
  /** The next moment a node's state changes with no beat (a deadline passes, the settling window closes); undefined: none ahead. */
  nextNodeStateChangeMs(nodes: readonly NodeView[]): number | undefined;
  /** `simulation`: the planner's figures a simulated engine times itself by (real engines ignore them). */
  startPlaced(
    placement: { model: string; profile: string; node: string; cards: readonly number[]; canary?: { readonly revision: string } },
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
