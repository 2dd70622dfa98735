import { z } from "zod";
import { engineNames } from "../catalog/schema.js";

/**
 * The agent protocol (SPEC S3, STYLE 7): every message between an agent and
 * the server carries `protocol: 1`, so an agent and a server of different
 * releases can tell each other apart before they misread a field. A change
 * that an older peer would misread raises the number; a new optional field
 * does not.
 *
 * Objects are not strict: a peer of a later release within the same protocol
 * may add optional fields, and refusing them would turn every additive change
 * into an outage of mixed-version fleets. The literal version is the guard.
 *
 * Agent → server (on the server's admin port):
 *   POST /api/v1/agent/join       JoinRequest      → JoinResponse
 *   POST /api/v1/agent/heartbeat  HeartbeatRequest → HeartbeatResponse   (Authorization: Bearer <credential>)
 *   A server that does not speak the agent's version answers 409 or 426 with
 *   `{error:{code:"version_unsupported", message, hint}}` naming both versions.
 *
 * Server → agent (on the agent's own control port, Authorization: Bearer <credential>):
 *   POST   /agent/v1/replicas                 StartReplicaRequest → 202 ReplicaStatus
 *   DELETE /agent/v1/replicas/:id[?drain=1]   → 202 ReplicaStatus (stops in the background)
 *   GET    /agent/v1/replicas                 → ReplicaList
 *   GET    /agent/v1/replicas/:id/logs?tail=N&follow=1  → text/plain (streamed while follow)
 */
export const protocolVersion = 1 as const;
export const protocolField = z.literal(protocolVersion);

export const agentPaths = {
  join: "/api/v1/agent/join",
  heartbeat: "/api/v1/agent/heartbeat",
  replicas: "/agent/v1/replicas",
  replica: (id: string) => `/agent/v1/replicas/${encodeURIComponent(id)}`,
  replicaLogs: (id: string) => `/agent/v1/replicas/${encodeURIComponent(id)}/logs`,
} as const;

const nodeNamePattern = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;
export const nodeNameSchema = z
  .string()
  .regex(nodeNamePattern, { message: "a node name of letters, digits and . _ - (at most 63, starting with a letter or digit)" });

/** Replica ids appear in file names (logs) and URLs, so they are restricted like node names. */
export const replicaIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, { message: "a replica id of letters, digits and . _ -" });

export const gpuInventorySchema = z.object({
  index: z.number().int().min(0),
  uuid: z.string(),
  /** nvidia-smi's product name, e.g. "NVIDIA H100 80GB HBM3". */
  name: z.string(),
  class: z.string(),
  memory_bytes: z.number().int().min(0),
  memory_used_bytes: z.number().int().min(0).optional(),
  fabric: z.string(),
});
export type GpuInventory = z.infer<typeof gpuInventorySchema>;

export const inventorySchema = z.object({
  hostname: z.string(),
  gpus: z.array(gpuInventorySchema),
  memory_bytes: z.number().int().min(0),
  cpu_cores: z.number().int().min(1),
  /** Engines whose program this node has (every engine when simulated). */
  engines: z.array(z.enum(engineNames)),
  /** Free bytes on the file system of the weights cache. */
  disk_free_bytes: z.number().int().min(0),
  /** True when the GPUs are pretend and every engine is the simulated one (--simulate). */
  simulated: z.boolean(),
});
export type Inventory = z.infer<typeof inventorySchema>;

export const labelsSchema = z.record(z.string(), z.string());

export const joinRequestSchema = z.object({
  protocol: protocolField,
  join_token: z.string().min(1),
  name: nodeNameSchema,
  /** The agent's control URL, as the server should call it. */
  address: z.url(),
  /** The node's default fabric; each GPU also names its own. */
  fabric: z.string().min(1),
  labels: labelsSchema,
  inventory: inventorySchema,
});
export type JoinRequest = z.infer<typeof joinRequestSchema>;

export const joinResponseSchema = z.object({
  protocol: protocolField,
  node: nodeNameSchema,
  /** The node's own secret: heartbeats present it, and the server presents it to the agent's control API. */
  credential: z.string().min(16),
  heartbeat_interval_ms: z.number().int().positive(),
});
export type JoinResponse = z.infer<typeof joinResponseSchema>;

export const replicaStates = ["fetching", "starting", "ready", "draining", "stopped", "failed"] as const;
export type ReplicaState = (typeof replicaStates)[number];
/** States after which a replica's process is gone and will not come back by itself. */
export const terminalReplicaStates: readonly ReplicaState[] = ["stopped", "failed"];

export const adapterSpecSchema = z.object({
  name: z.string().min(1),
  source: z.string().min(1),
  scale: z.number().positive().optional(),
});

export const replicaSpecSchema = z.object({
  id: replicaIdSchema,
  model: z.string().min(1),
  profile: z.string().min(1),
  engine: z.enum(engineNames),
  /** A URL (a file, or a folder ending in /), hf://org/name@revision[/path], or a local path. */
  source: z.string().min(1),
  /** GPU indices on this node; empty for a CPU replica. */
  cards: z.array(z.number().int().min(0)),
  context: z.number().int().positive().optional(),
  slots: z.number().int().positive().default(1),
  cpu_cores: z.number().positive().optional(),
  quantization: z.string().optional(),
  gpu_memory_utilization: z.number().gt(0).max(1).default(0.9),
  args: z.array(z.string()).default([]),
  env: z.record(z.string(), z.string()).default({}),
  adapters: z.array(adapterSpecSchema).default([]),
  /** A fixed port for the engine; left out, the agent picks a free one. */
  port: z.number().int().min(1).max(65535).optional(),
  /** How long the engine may take to answer its health check; left out, the agent's default. */
  startup_timeout_ms: z.number().int().positive().optional(),
  /** How long a stopped engine gets between SIGTERM and SIGKILL; left out, the agent's default. */
  stop_grace_ms: z.number().int().min(0).optional(),
  /** Timing hints for the simulated engine (passed as LLMGW_SIM_* variables); ignored by real engines. */
  simulation: z
    .object({
      weights_bytes_per_card: z.number().int().min(0).optional(),
      load_ms: z.number().int().min(0).optional(),
    })
    .optional(),
});
export type ReplicaSpec = z.infer<typeof replicaSpecSchema>;
export type ReplicaSpecInput = z.input<typeof replicaSpecSchema>;

export const replicaProgressSchema = z.object({
  /** 0..1 */
  fraction: z.number().min(0).max(1),
  bytes_done: z.number().int().min(0),
  /** Undefined while the size is not yet known. */
  bytes_total: z.number().int().min(0).optional(),
});
export type ReplicaProgress = z.infer<typeof replicaProgressSchema>;

export const replicaStatusSchema = z.object({
  id: replicaIdSchema,
  model: z.string(),
  profile: z.string(),
  engine: z.enum(engineNames),
  cards: z.array(z.number().int().min(0)),
  state: z.enum(replicaStates),
  /** While fetching. */
  progress: replicaProgressSchema.optional(),
  /** http://127.0.0.1:PORT once the engine has a port. */
  endpoint: z.string().optional(),
  pid: z.number().int().positive().optional(),
  /** Failed: a sentence naming the URL, engine or node, and the log tail when the engine wrote one. */
  reason: z.string().optional(),
  /** True when this agent process found the engine already running (adopted after a restart). */
  adopted: z.boolean().optional(),
  /** A ready engine's requests running and waiting, from its own metrics at the heartbeat; absent when unread. */
  load: z.object({ running: z.number().min(0), waiting: z.number().min(0) }).optional(),
  /** ISO time of the last state change. */
  since: z.string(),
});
export type ReplicaStatus = z.infer<typeof replicaStatusSchema>;

export const heartbeatRequestSchema = z.object({
  protocol: protocolField,
  name: nodeNameSchema,
  /** The control URL may change when an agent restarts on a new port. */
  address: z.url(),
  /** Sent with the first heartbeat after a join or restart, and whenever it changed. */
  inventory: inventorySchema.optional(),
  /** Every replica the agent knows, including stopped and failed ones not yet reported. */
  replicas: z.array(replicaStatusSchema),
});
export type HeartbeatRequest = z.infer<typeof heartbeatRequestSchema>;

export const heartbeatResponseSchema = z.object({
  protocol: protocolField,
});
export type HeartbeatResponse = z.infer<typeof heartbeatResponseSchema>;

export const startReplicaRequestSchema = z.object({
  protocol: protocolField,
  replica: replicaSpecSchema,
});
export type StartReplicaRequest = z.infer<typeof startReplicaRequestSchema>;
export type StartReplicaRequestInput = z.input<typeof startReplicaRequestSchema>;

export const replicaListSchema = z.object({
  protocol: protocolField,
  replicas: z.array(replicaStatusSchema),
});
export type ReplicaList = z.infer<typeof replicaListSchema>;

export const replicaAnswerSchema = z.object({
  protocol: protocolField,
  replica: replicaStatusSchema,
});
export type ReplicaAnswer = z.infer<typeof replicaAnswerSchema>;

/**
 * Reads the protocol number out of any message, before the full schema runs,
 * so a message of another version is refused with both versions named rather
 * than with a list of field mismatches.
 */
export function protocolOf(message: unknown): unknown {
  if (typeof message === "object" && message !== null && "protocol" in message) {
    return (message as { protocol: unknown }).protocol;
  }
  return undefined;
}

export function versionMismatchMessage(side: "agent" | "server", theirs: unknown, place: string): string {
  const other = side === "agent" ? "server" : "agent";
  return `${place}: this ${side} speaks agent protocol ${protocolVersion}; the ${other} sent protocol ${theirs === undefined ? "(none)" : JSON.stringify(theirs)}`;
}
