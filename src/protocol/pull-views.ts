import type { FetchState } from "./agent-protocol.js";

/**
 * Where one source of a pull stands on one node. `unknown`: the agent holds
 * no record of it (restarted since the pull began); pulling again resumes
 * from what it had fetched.
 */
export interface PullSourceView {
  /** As the catalog writes it (`mirror:…`, `hf://…`), password masked. */
  source: string;
  /** What the agent fetches: `mirror:` resolved against the server's mirror, password masked. */
  fetched_from: string;
  state: FetchState | "unknown";
  bytes_done: number;
  /** Null until every file's size is known. */
  bytes_total: number | null;
  /** Once cached: the bytes it takes on the node's disk. */
  size_bytes: number | null;
  /** It was in the node's cache before this pull: nothing was downloaded. */
  already_cached: boolean;
  /** A simulated agent (--simulate without --simulate-fetch) pretends its weights: nothing was downloaded. */
  simulated: boolean;
  /** Failed: the file, the node and what to do. */
  reason: string | null;
}

/** One node of the model's pool: the profile whose weights it gets, and each of that profile's sources (weights, then adapters). */
export interface PullNodeView {
  node: string;
  profile: string;
  /** fetching until every source is cached or failed; failed when any failed or the agent could not be asked. */
  state: FetchState;
  sources: PullSourceView[];
  /** The agent could not be asked (lost node, unreachable agent); its sources are then empty. */
  reason: string | null;
}

/** A node the model cannot run on, left out of the pull. */
export interface PullSkippedView {
  node: string;
  /** Why, per profile: "h100: has no h100 cards; cpu: has no llamacpp installed". */
  reason: string;
}

/** `POST /api/v1/models/{name}/pull` and `GET` of the same path. */
export interface PullView {
  model: string;
  nodes: PullNodeView[];
  skipped: PullSkippedView[];
}
