/** Admin API views of a model's LoRA adapters. */

export interface AdapterView {
  readonly name: string;
  readonly source: string;
  /** llama.cpp only: the strength a request for it applies; null for the engine's own (1). */
  readonly scale: number | null;
}

export interface AdaptersView {
  readonly model: string;
  readonly adapters: readonly AdapterView[];
}

/** What adding or removing an adapter did, and how its replicas took the change. */
export interface AdapterChangeView extends AdaptersView {
  readonly change: "added" | "removed";
  readonly adapter: string;
  /**
   * runtime: loaded into (or unloaded from) each running engine, no restart;
   * restart: the engines take adapters only at start, so the replicas are replaced by surge;
   * catalog: no replica runs, and the next ones start with the catalog's adapters.
   */
  readonly applied: "runtime" | "restart" | "catalog";
  /** Replicas whose running engine took the change (runtime). */
  readonly replicas_changed: readonly string[];
  /** Replicas started before this moment are replaced (restart; for `--wait`). */
  readonly restart_before: string | null;
  readonly in_place: boolean;
  /** Replicas to replace (restart). */
  readonly replicas: number;
  /** Engines that did not take the change but need not (an unload refused after the catalog stopped routing the name). */
  readonly warnings: readonly string[];
}
