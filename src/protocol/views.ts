import type { Scaling, ComfySettings, EngineName, ModelClass } from "../catalog/index.js";
import type { ReplicaState } from "./agent-protocol.js";
import type { PullNodeView, PullSkippedView, PullSourceView, PullView } from "./pull-views.js";
import type { NodeLlamaCppView } from "./llama-cpp-view.js";
import type { PresetCpuView, PresetPlacementView, PresetProfileView, PresetView } from "./preset-views.js";

// Presets' views have a file of their own; the views every page shows are here.
export type { NodeLlamaCppView } from "./llama-cpp-view.js";
export type { PresetCpuView, PresetPlacementView, PresetProfileView, PresetView } from "./preset-views.js";

/**
 * The admin API's answers as tools see them (`ctl ... --json`, the console,
 * scripts): documented in docs/ctl.md, so a field is added, never renamed.
 * They live here, below every folder that builds or reads them, so the API,
 * the CLI, the demo and the console share one definition.
 */

/** Whether a node is heard from: settling right after a server restart, lost past the heartbeat deadline. */
export type NodeState = "ready" | "settling" | "lost";

export interface ReplicaCounts {
  readonly ready: number;
  /** What the model asks for now: at least its minimum, and every replica counted toward it (on demand, grown under load, a surge). */
  readonly desired: number;
}

export type ModelState = "external" | "stopped" | "on-demand" | "pending" | "degraded" | "ready";

/**
 * The model object of the admin API and of `ctl ... --json`: a stable
 * interface for tools (documented in docs/ctl.md). It shows what is in force,
 * with every default filled in, and never a secret: an external model's key
 * and a profile's secret_env are named by their server variables only;
 * secret-looking env values and URL passwords are masked, and for a read-only
 * token every env value (catalog/redact.ts).
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
  profiles: readonly ProfileView[];
  external: ExternalView | null;
  /** The shipped preset it was added from (`ctl model add PRESET`); null for a model written by hand. */
  preset: string | null;
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

/** One weights source the server read before storing a model: its place in the entry and what it holds. */
export interface SourceCheckedView {
  /** The place in the entry: `profiles[0].source`, `adapters[1].source`. */
  where: string;
  /** The source as written, any URL password masked. */
  source: string;
  /** The weights' bytes; null for an adapter. */
  bytes: number | null;
  /** For a person: "15.2 GiB (safetensors BF16, 7.62B parameters)". */
  summary: string;
}

/**
 * The answer to adding a model: the model as in force, and the sources the
 * server read before storing it; null when the caller skipped the check.
 */
export interface AddedModelView extends ModelView {
  sources_checked: SourceCheckedView[] | null;
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

/**
 * A profile with every default filled in. Every field is present, null when
 * the entry leaves it out: JSON drops undefined, and a tool reading
 * `memory_gb` must not have to tell "none" from "this version has no such field".
 */
export interface ProfileView {
  name: string;
  engine: EngineName;
  source: string;
  gpu_class: string | null;
  gpus: number;
  quantization: string | null;
  memory_gb: number | null;
  cpu_cores: number | null;
  slots: number;
  args: readonly string[];
  env: Readonly<Record<string, string>>;
  /** Engine variables taken from the server's environment: variable names only, never values. */
  secret_env: Readonly<Record<string, string>>;
  /** A ComfyUI profile's workflow, inputs, outputs, files and custom nodes, as written; null for other engines. */
  comfy: ComfySettings | null;
}

/** A model served elsewhere: the key's environment variable on the server, never the key. */
export interface ExternalView {
  base_url: string;
  api_key_env: string | null;
  model: string | null;
}

/** A node in the admin API and `ctl nodes --json`. Never its credential. */
export interface NodeView {
  name: string;
  state: NodeState;
  address: string;
  hostname: string;
  fabric: string;
  labels: Record<string, string>;
  gpus: NodeCardView[];
  memory_bytes: number;
  cpu_cores: number;
  engines: string[];
  disk_free_bytes: number;
  simulated: boolean;
  /** Whether ComfyUI is on the node and whether its agent can install it; null from agents that do not say. */
  comfyui?: { present: boolean; installable: boolean } | null;
  /** Which llama.cpp runs llamacpp replicas there (llama-server, or the built-in engine and its build); null when none or an agent that does not say. */
  llama_cpp?: NodeLlamaCppView | null;
  /** The agent's llmgw release; null from agents of 0.1.0, which do not say. */
  agent_version?: string | null;
  /** Where the node is reached on its fabric (`llmgw agent --fabric-address`), where replicas over several nodes meet; null when its agent reports none. */
  fabric_network?: { address: string; interface: string } | null;
  joined_at: string;
  last_seen_at: string;
  replicas: string[];
  /** No new replicas are placed on a cordoned node (a draining one is cordoned too). */
  cordoned: boolean;
  /** Its replicas are being moved elsewhere (`ctl node drain`). */
  draining: boolean;
}

export interface NodeCardView {
  index: number;
  uuid: string;
  name: string;
  class: string;
  memory_bytes: number;
  /** What the card says is used (nvidia-smi's memory.used); null when its agent does not tell. */
  memory_used_bytes: number | null;
  /** Held by processes llmgw did not start, which placement counts as taken; null from agents that do not report it. */
  memory_foreign_bytes: number | null;
  fabric: string;
  replica: string | null;
}

/** `pending`: placed and recorded, the agent not yet told (or its answer not yet heard). */
export type ReplicaViewState = ReplicaState | "lost" | "pending";

/** Weights being fetched; bytes_total is null until the size is known. */
export interface ReplicaProgressView {
  fraction: number;
  bytes_done: number;
  bytes_total: number | null;
}

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
  progress: ReplicaProgressView | null;
  reason: string | null;
  pid: number | null;
  adopted: boolean;
  since: string;
  created_at: string;
  /** "canary" for a canary's replica (a trial revision beside the stable ones), else "stable". */
  arm: "stable" | "canary";
  /** The llama.cpp a llamacpp replica runs on: llama-server (its path and version) or the built-in engine with the build it loads; null for other engines and simulated nodes. */
  llama_cpp: ReplicaLlamaCppView | null;
  /**
   * A replica over several nodes: every member by rank, the leader (rank 0,
   * whose node, cards and endpoint the replica's own fields are) first. null
   * for a replica on one node.
   */
  members: ReplicaMemberView[] | null;
}

/** One member of a replica over several nodes. */
export interface ReplicaMemberView {
  rank: number;
  node: string;
  gpus: number[];
  state: ReplicaViewState;
  pid: number | null;
  reason: string | null;
}

export type ReplicaLlamaCppView = { kind: "llama-server"; path: string; version: string | null } | { kind: "built-in"; version: string; build: string };


/** An admin-API token as listed (`ctl tokens --json`): never the token itself. */
export interface TokenView {
  name: string;
  role: "admin" | "read";
  created_at: string;
}

/** The answer to creating a token: the only time the token is shown. */
export interface CreatedTokenView extends TokenView {
  token: string;
}

/** One change in `ctl audit --json`; before/after are whole model entries, null when added or removed. */
export interface AuditEventView {
  id: number;
  at: string;
  actor: string;
  actor_user: string | null;
  action: string;
  model: string | null;
  before: unknown;
  after: unknown;
}

/** Every field of a view, each once: the compiler refuses a list that misses a field of the interface or names one it lacks. */
type FieldSet<View> = { readonly [Field in keyof View]-?: true };

function fields<View>(set: FieldSet<View>): readonly string[] {
  return Object.keys(set);
}

/** Shared by Model and AddedModel, which is a Model with one field more. */
const modelFields: FieldSet<ModelView> = {
  name: true,
  source: true,
  declared_in: true,
  origin: true,
  context: true,
  max_output: true,
  class: true,
  class_set: true,
  scaling: true,
  target: true,
  owner: true,
  fallbacks: true,
  aliases: true,
  adapters: true,
  profiles: true,
  external: true,
  preset: true,
  state: true,
  replicas: true,
  placement: true,
  last_failure: true,
};

/**
 * The fields of each shape docs/ctl.md documents, under its name for
 * the shape (or the command it documents the shape under). A test holds docs/ctl.md to this list and the API's answers to
 * it (every field present, null when absent), so a field added to a view
 * without its documentation fails there, not in a user's script.
 */
export const documentedViewFields = {
  Preset: fields<PresetView>({ name: true, description: true, licence: true, tasks: true, added_as: true, profiles: true, runs_on: true, why_not: true, on_cpu: true }),
  "Preset.on_cpu": fields<PresetCpuView>({ profile: true, node: true, llama_cpp: true, why_not: true }),
  "Preset.profiles[]": fields<PresetProfileView>({
    name: true,
    engine: true,
    source: true,
    gpu_class: true,
    gpus: true,
    quantization: true,
    weights_bytes: true,
    bytes_per_card: true,
    planned_memory_bytes: true,
    memory_bytes: true,
    cpu_cores: true,
    unreadable: true,
  }),
  "Preset.runs_on": fields<PresetPlacementView>({ profile: true, node: true, cards: true, gpu_class: true }),
  Model: fields<ModelView>(modelFields),
  AddedModel: fields<AddedModelView>({ ...modelFields, sources_checked: true }),
  "AddedModel.sources_checked[]": fields<SourceCheckedView>({ where: true, source: true, bytes: true, summary: true }),
  "Model.scaling": fields<Scaling>({ min: true, max: true, idle_timeout: true }),
  "Model.profiles[]": fields<ProfileView>({
    name: true,
    engine: true,
    source: true,
    gpu_class: true,
    gpus: true,
    quantization: true,
    memory_gb: true,
    cpu_cores: true,
    slots: true,
    args: true,
    env: true,
    secret_env: true,
    comfy: true,
  }),
  "Model.external": fields<ExternalView>({ base_url: true, api_key_env: true, model: true }),
  "Model.replicas": fields<ReplicaCounts>({ ready: true, desired: true }),
  Node: fields<NodeView>({
    name: true,
    state: true,
    address: true,
    hostname: true,
    fabric: true,
    labels: true,
    gpus: true,
    memory_bytes: true,
    cpu_cores: true,
    engines: true,
    disk_free_bytes: true,
    simulated: true,
    comfyui: true,
    llama_cpp: true,
    agent_version: true,
    fabric_network: true,
    joined_at: true,
    last_seen_at: true,
    replicas: true,
    cordoned: true,
    draining: true,
  }),
  "Node.gpus[]": fields<NodeCardView>({ index: true, uuid: true, name: true, class: true, memory_bytes: true, memory_used_bytes: true, memory_foreign_bytes: true, fabric: true, replica: true }),
  Replica: fields<ReplicaView>({
    arm: true,
    id: true,
    model: true,
    profile: true,
    node: true,
    engine: true,
    gpus: true,
    state: true,
    endpoint: true,
    progress: true,
    reason: true,
    pid: true,
    adopted: true,
    since: true,
    created_at: true,
    llama_cpp: true,
    members: true,
  }),
  "Replica.members[]": fields<ReplicaMemberView>({ rank: true, node: true, gpus: true, state: true, pid: true, reason: true }),
  "Replica.progress": fields<ReplicaProgressView>({ fraction: true, bytes_done: true, bytes_total: true }),
  Pull: fields<PullView>({ model: true, nodes: true, skipped: true }),
  "Pull.nodes[]": fields<PullNodeView>({ node: true, profile: true, state: true, sources: true, reason: true }),
  "Pull.nodes[].sources[]": fields<PullSourceView>({
    source: true,
    fetched_from: true,
    state: true,
    bytes_done: true,
    bytes_total: true,
    size_bytes: true,
    already_cached: true,
    simulated: true,
    reason: true,
  }),
  "Pull.skipped[]": fields<PullSkippedView>({ node: true, reason: true }),
  // Shapes docs/ctl.md documents inline, under the command that prints them.
  "ctl tokens --json": fields<TokenView>({ name: true, role: true, created_at: true }),
  "ctl token create --json": fields<CreatedTokenView>({ name: true, role: true, created_at: true, token: true }),
  "ctl audit --json": fields<AuditEventView>({ id: true, at: true, actor: true, actor_user: true, action: true, model: true, before: true, after: true }),
} as const;

export type DocumentedView = keyof typeof documentedViewFields;
