import type { ResolvedProfile, Scaling } from "../catalog/catalog-model.js";
import type { ModelClass } from "../catalog/schema.js";
import type { ReplicaState, ReplicaStatus } from "./agent-protocol.js";

/**
 * The admin API's answers as tools see them (`ctl ... --json`, the console,
 * scripts): documented in the README, so a field is added, never renamed.
 * They live here, below every folder that builds or reads them, so the API,
 * the CLI, the demo and the console share one definition.
 */

/** Whether a node is heard from: settling right after a server restart, lost past the heartbeat deadline. */
export type NodeState = "ready" | "settling" | "lost";

export interface ReplicaCounts {
  readonly ready: number;
  readonly desired: number;
}

export type ModelState = "external" | "stopped" | "on-demand" | "pending" | "degraded" | "ready";

/**
 * The model object of the admin API and of `ctl ... --json`: a stable
 * interface for tools (documented in the README). It shows what is in force,
 * with every default filled in, and never a secret: an external model's key
 * is named by its environment variable only, and secret-looking env values
 * and URL passwords are masked (catalog/redact.ts).
 */
export interface ModelView {
  name: string;
  source: "file" | "runtime";
  /** For a declared model, the file to edit ("server.yaml"); null for a runtime one. */
  declared_in: string | null;
  origin: string | null;
  context: number | null;
  max_output: number | null;
  class: ModelClass;
  class_set: boolean;
  scaling: Scaling;
  target: { in_flight: number } | null;
  owner: string | null;
  fallbacks: readonly string[];
  aliases: readonly string[];
  adapters: readonly { name: string; source: string; scale?: number | undefined }[];
  profiles: readonly ResolvedProfile[];
  external: { base_url: string; api_key_env: string | null; model: string | null } | null;
  state: ModelState;
  replicas: ReplicaCounts;
  /**
   * Whether the reconciler could place what the model asks for: null while it
   * has not looked yet (or for an external model); `unplaceable` with the
   * reason in the planner's words ("0 of 2 nodes: ...").
   */
  placement: PlacementStatus | null;
  /** The last engine failure of one of its replicas, and when the reconciler tries again. */
  last_failure: FailureStatus | null;
}

export interface PlacementStatus {
  state: "placed" | "unplaceable" | "waiting";
  reason: string | null;
}

export interface FailureStatus {
  reason: string;
  at: string;
  /** Failures in a row; the wait before the next start doubles with each. */
  failures: number;
  /** When the reconciler starts it again; null when it is not waiting. */
  retry_at: string | null;
}

/** One of the reconciler's actions or refusals (`ctl events`, GET /api/v1/events). Kinds are noun-verb: replica-started, model-unplaceable. */
export interface EventView {
  id: number;
  at: string;
  kind: string;
  model: string | null;
  replica: string | null;
  node: string | null;
  message: string;
}

/** A node in the admin API and `ctl nodes --json`. Never its credential. */
export interface NodeView {
  name: string;
  state: NodeState;
  address: string;
  hostname: string;
  fabric: string;
  labels: Record<string, string>;
  gpus: { index: number; uuid: string; name: string; class: string; memory_bytes: number; memory_used_bytes: number | null; fabric: string; replica: string | null }[];
  memory_bytes: number;
  cpu_cores: number;
  engines: string[];
  disk_free_bytes: number;
  simulated: boolean;
  joined_at: string;
  last_seen_at: string;
  replicas: string[];
  /** No new replicas are placed on a cordoned node (a draining one is cordoned too). */
  cordoned: boolean;
  /** Its replicas are being moved elsewhere (`ctl node drain`). */
  draining: boolean;
}

/** `pending`: placed and recorded, the agent not yet told (or its answer not yet heard). */
export type ReplicaViewState = ReplicaState | "lost" | "pending";

/** A replica in the admin API and `ctl replicas --json`. */
export interface ReplicaView {
  id: string;
  model: string;
  profile: string;
  node: string;
  engine: string;
  gpus: number[];
  state: ReplicaViewState;
  endpoint: string | null;
  progress: ReplicaStatus["progress"] | null;
  reason: string | null;
  pid: number | null;
  adopted: boolean;
  since: string;
  created_at: string;
}

