import { z } from "zod";
import { engineNames } from "../catalog/light.js";
import { DomainError } from "../errors/light.js";
import { cardList, identifier, label, prose, protocolField, protocolVersion } from "./agent-fields.js";
import { inventorySchema } from "./agent-inventory.js";

/**
 * The agent protocol: every message between an agent and
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
 *   GET  /api/v1/agent/identity   → ServerIdentity (no credential: asked before the credential goes to a server at a new URL)
 *   A server that does not speak the agent's version answers 409 or 426 with
 *   `{error:{code:"version_unsupported", message, hint}}` naming both versions.
 *
 * Server → agent (on the agent's own control port, Authorization: Bearer <control secret>;
 * an agent that never received a control secret, joined to an older server, accepts its credential):
 *   POST   /agent/v1/replicas                 StartReplicaRequest → 202 ReplicaStatus
 *   DELETE /agent/v1/replicas/:id[?drain=1]   → 202 ReplicaStatus (stops in the background)
 *   GET    /agent/v1/replicas                 → ReplicaList
 *   GET    /agent/v1/replicas/:id/logs?tail=N&follow=1  → text/plain (streamed while follow)
 *   POST   /agent/v1/fetches                  StartFetchRequest → 202 FetchAnswer (weights into the cache, no engine)
 *   GET    /agent/v1/fetches                  → FetchList
 */
export { protocolVersion, protocolField } from "./agent-fields.js";
export * from "./agent-fetches.js";
export * from "./agent-inventory.js";

export const agentPaths = {
  join: "/api/v1/agent/join",
  heartbeat: "/api/v1/agent/heartbeat",
  /** The server's identity, asked without a credential: an agent checks it before sending its credential to a server at a new address. */
  identity: "/api/v1/agent/identity",
  replicas: "/agent/v1/replicas",
  replica: (id: string) => `/agent/v1/replicas/${encodeURIComponent(id)}`,
  replicaLogs: (id: string) => `/agent/v1/replicas/${encodeURIComponent(id)}/logs`,
  fetches: "/agent/v1/fetches",
  replicaAdapters: (id: string) => `/agent/v1/replicas/${encodeURIComponent(id)}/adapters`,
  replicaAdapterUnload: (id: string, adapter: string) => `/agent/v1/replicas/${encodeURIComponent(id)}/adapters/${encodeURIComponent(adapter)}/unload`,
} as const;

/** A URL the server calls or shows: http(s) only, so a report cannot point anyone at file:, javascript: or a data: blob. */
export const httpUrlSchema = z.url({ protocol: /^https?$/, message: "an http:// or https:// URL" }).max(2048);

const nodeNamePattern = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;
export const nodeNameSchema = z
  .string()
  .regex(nodeNamePattern, { message: "a node name of letters, digits and . _ - (at most 63, starting with a letter or digit)" });

/** Replica ids appear in file names (logs) and URLs, so they are restricted like node names. */
export const replicaIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, { message: "a replica id of letters, digits and . _ -" });

export const labelsSchema = z
  .record(identifier("a label's name", 64), label("a label's value"))
  .refine((labels) => Object.keys(labels).length <= 64, { message: "at most 64 labels" });

/** A node's address on its fabric and the interface it is on, as its agent reports it (optional within protocol 1). */
export const fabricNetworkSchema = z.object({
  address: z.string().min(1).max(255),
  interface: identifier("a network interface", 64),
});
export type FabricNetwork = z.infer<typeof fabricNetworkSchema>;

export const joinRequestSchema = z.object({
  protocol: protocolField,
  join_token: identifier("the join token", 256),
  name: nodeNameSchema,
  /** The agent's control URL, as the server should call it. */
  address: httpUrlSchema,
  /** The node's default fabric; each GPU also names its own. */
  fabric: identifier("the fabric"),
  /** Where the node is reached on that fabric, for the rendezvous of replicas over several nodes; absent when the agent was given none. */
  fabric_network: fabricNetworkSchema.optional(),
  labels: labelsSchema,
  inventory: inventorySchema,
});
export type JoinRequest = z.infer<typeof joinRequestSchema>;

/**
 * A server's identity: the same through a change of its address or scheme
 * (http:// to https://, an IP to a name), the same for every server sharing
 * one database, and different for any other server. The agent keys its
 * credential to it, not to the URL it was given.
 */
export const serverIdSchema = z.string().regex(/^[0-9a-f]{16,128}$/, "hexadecimal digits");

export const serverIdentitySchema = z.object({
  protocol: protocolField,
  server_id: serverIdSchema,
});
export type ServerIdentity = z.infer<typeof serverIdentitySchema>;

export const joinResponseSchema = z.object({
  protocol: protocolField,
  node: nodeNameSchema,
  /** The node's own secret: heartbeats present it. The server keeps only its hash. */
  credential: z.string().min(16),
  /**
   * The server's secret toward this agent: the server presents it on every
   * control call, and the agent keeps only its hash, so neither side's files
   * alone let anyone command a node. Optional: older servers sent none, and
   * their agents accept the credential instead.
   */
  control_secret: z.string().min(16).max(200).optional(),
  heartbeat_interval_ms: z.number().int().positive(),
  /** The server's identity (see serverIdentitySchema); absent from servers of earlier releases. */
  server_id: serverIdSchema.optional(),
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

/**
 * A member's place in a replica over several nodes (added within protocol 1:
 * optional, so an older agent that never sees it runs one-node replicas as
 * before, and an older server never sends it).
 */
export const distributedSpecSchema = z.object({
  nodes: z.number().int().min(2).max(8),
  /** 0 is the leader, which serves the API; the others join it. */
  rank: z.number().int().min(0).max(7),
  /** The leader's address on the fabric the members share. */
  leader_address: z.string().min(1).max(255),
  /**
   * The rendezvous port the leader's agent reserved. Left out in the leader's
   * own spec: its agent reserves a free port when it accepts the start and
   * reports it as the replica's `rendezvous_port`, which the server then hands
   * to every other member. A member of rank 1 and up is always sent it (the
   * server's own record of such a member leaves it out: it is the leader's
   * `rendezvous_port`), and an agent refuses to start one without it.
   */
  port: z.number().int().min(1).max(65535).optional(),
  /** The interface of that fabric on this member's node, for NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME. */
  network_interface: identifier("a network interface", 64).optional(),
  /** The gang's replica id (its leader's), so a member's logs and state name the replica it belongs to. */
  replica: replicaIdSchema.optional(),
}).refine((spec) => spec.rank < spec.nodes, { message: "the rank must be below the node count", path: ["rank"] });
export type DistributedSpec = z.infer<typeof distributedSpecSchema>;

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
  /**
   * The engine's own API key: the server makes one per replica and only
   * gateways hold it, so an engine listening where other machines can reach
   * it answers nobody else. The agent passes it the way the engine reads it
   * (an environment variable where the engine has one, so it is not in `ps`)
   * and keeps it out of logs and its state file.
   */
  api_key: z.string().min(16).optional(),
  /** A ComfyUI replica's files (linked into models/<to>/) and custom nodes (cloned into custom_nodes/ at their revision). */
  comfy: z
    .object({
      files: z.array(z.object({ source: z.string().min(1), to: z.string().regex(/^[A-Za-z0-9_-]+(\/[A-Za-z0-9_-]+)*\/?$/), name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._ +-]{0,254}$/).optional() })).max(200),
      custom_nodes: z.array(z.object({ source: z.string().url(), revision: z.string().regex(/^[A-Za-z0-9._\/-]{1,200}$/) })).max(200),
    })
    .optional(),
  /** Timing hints for the simulated engine (passed as LLMGW_SIM_* variables); ignored by real engines. */
  simulation: z
    .object({
      weights_bytes_per_card: z.number().int().min(0).optional(),
      load_ms: z.number().int().min(0).optional(),
    })
    .optional(),
  /** Set for a member of a replica over several nodes: its rank, the leader's address and the rendezvous port. */
  distributed: distributedSpecSchema.optional(),
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
  model: identifier("the model"),
  profile: identifier("the profile"),
  engine: z.enum(engineNames),
  cards: cardList,
  state: z.enum(replicaStates),
  /** While fetching. */
  progress: replicaProgressSchema.optional(),
  /** http://127.0.0.1:PORT once the engine has a port. */
  endpoint: httpUrlSchema.optional(),
  pid: z.number().int().positive().max(2 ** 31 - 1).optional(),
  /** Failed: a sentence naming the URL, engine or node, and the log tail when the engine wrote one. */
  reason: prose.optional(),
  /** True when this agent process found the engine already running (adopted after a restart). */
  adopted: z.boolean().optional(),
  /** A ready engine's requests running and waiting, from its own metrics at the heartbeat; absent when unread. */
  load: z.object({ running: z.number().min(0), waiting: z.number().min(0) }).optional(),
  /** ISO time of the last state change. */
  since: z.iso.datetime({ offset: true }),
  /** A gang leader's rendezvous port, reserved by its agent before the members start; absent for one-node replicas. */
  rendezvous_port: z.number().int().min(1).max(65535).optional(),
});
export type ReplicaStatus = z.infer<typeof replicaStatusSchema>;

/** An engine's endpoint is on the agent's own loopback, or on the node's advertised host; anywhere else would send traffic off the node. */
function endpointOnNode(endpoint: string, nodeAddress: string): boolean {
  // Refinements run even when a field already failed its own check: an endpoint that is not a URL is refused there.
  if (!URL.canParse(endpoint)) return true;
  const host = new URL(endpoint).hostname;
  if (host === "localhost" || host === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)) return true;
  return URL.canParse(nodeAddress) && host === new URL(nodeAddress).hostname;
}

/** One agent supervises at most this many replicas: more is a malformed message, not a node. */
const maxReplicasPerNode = 4096;

export const heartbeatRequestSchema = z
  .object({
    protocol: protocolField,
    name: nodeNameSchema,
    /** The control URL may change when an agent restarts on a new port. */
    address: httpUrlSchema,
    /** Sent with the first heartbeat after a join or restart, and whenever it changed. */
    inventory: inventorySchema.optional(),
    /** Every replica the agent knows, including stopped and failed ones not yet reported. */
    replicas: z.array(replicaStatusSchema).max(maxReplicasPerNode),
    /** sha256 (hex) of the control secret the agent holds; the server answers with the secret when it differs or is missing. */
    control_secret_hash: z.string().regex(/^[0-9a-f]{64}$/).optional(),
    /** Where the node is reached on its fabric, on every beat: an agent restarted with another --fabric-address moves its node there. */
    fabric_network: fabricNetworkSchema.optional(),
  })
  .superRefine((beat, context) => {
    beat.replicas.forEach((replica, index) => {
      if (replica.endpoint !== undefined && !endpointOnNode(replica.endpoint, beat.address)) {
        context.addIssue({
          code: "custom",
          path: ["replicas", index, "endpoint"],
          message: `replica ${replica.id}'s endpoint ${replica.endpoint} is neither on loopback nor on the node's host (${beat.address})`,
        });
      }
    });
  });
export type HeartbeatRequest = z.infer<typeof heartbeatRequestSchema>;

export const heartbeatResponseSchema = z.object({
  protocol: protocolField,
  /** Sent when the agent's control secret is missing or out of date (an agent upgraded in place, a server key restored). */
  control_secret: z.string().min(16).max(200).optional(),
  /** The server's identity, so an agent that joined an earlier release learns it; absent from servers of earlier releases. */
  server_id: serverIdSchema.optional(),
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

/**
 * The server asks a ready replica's agent to load an adapter into the running
 * engine: the agent fetches it into its cache and calls the engine's load
 * endpoint. The replica's key travels with it, since an adopted replica's
 * agent does not keep it.
 */
export const runtimeAdapterLoadSchema = z.object({
  protocol: protocolField,
  adapter: adapterSpecSchema,
  api_key: z.string().min(16).optional(),
});
export type RuntimeAdapterLoad = z.infer<typeof runtimeAdapterLoadSchema>;

export const runtimeAdapterUnloadSchema = z.object({
  protocol: protocolField,
  api_key: z.string().min(16).optional(),
});

export const replicaAnswerSchema = z.object({
  protocol: protocolField,
  replica: replicaStatusSchema,
});
export type ReplicaAnswer = z.infer<typeof replicaAnswerSchema>;

/**
 * Refuses a message of another protocol version, naming both, before its
 * schema runs: a peer of another release would otherwise get a list of field
 * mismatches instead of "upgrade". A message with no version at all (`{}`,
 * garbage) is no peer of another release: it is left to the schema, which
 * refuses it as invalid input. Undefined when the message may be read.
 */
export function protocolRefusal(message: unknown, reader: { readonly side: "agent" | "server"; readonly place: string; readonly hint: string }): DomainError | undefined {
  if (typeof message !== "object" || message === null || !("protocol" in message)) return undefined;
  const theirs = (message as { protocol: unknown }).protocol;
  if (theirs === protocolVersion) return undefined;
  const other = reader.side === "agent" ? "server" : "agent";
  return new DomainError(
    "version_unsupported",
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- JSON.stringify answers undefined for undefined, which its type leaves out
    `${reader.place}: this ${reader.side} speaks agent protocol ${protocolVersion}; the ${other} sent protocol ${(JSON.stringify(theirs) ?? String(theirs)).slice(0, 40)}`,
    reader.hint,
  );
}
