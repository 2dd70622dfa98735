import { z } from "zod";
import { comfyOutputs } from "../catalog/comfy-schema.js";
import { engineNames } from "../catalog/schema.js";

/**
 * The routing table: everything a gateway needs to answer /v1, and nothing it
 * has to ask the store for. The server builds it from the catalog and the
 * fleet off the request path, and every gateway (the server's own /v1 and
 * each `llmgw gateway`) swaps it in whole, so a request never waits on the
 * database and never sees half of a change.
 *
 * Lenient like the agent protocol: a gateway of an older release following a
 * newer server keeps what it reads.
 *
 * It holds each replica's API key (the gateways present it to the engine), so
 * it is served only to admin tokens (GET /api/v1/routing) and never logged.
 * External providers' keys are not in it: each gateway reads them from its
 * own environment by the variable's name.
 */

export const routingModes = ["least", "prefix", "cache"] as const;
export type RoutingMode = (typeof routingModes)[number];

export const routingReplicaSchema = z.object({
  id: z.string(),
  node: z.string(),
  /** http://HOST:PORT as the gateway reaches the engine, without a trailing slash. */
  endpoint: z.string(),
  /** Draining replicas finish what they hold and get nothing new. */
  state: z.enum(["ready", "draining"]),
  /** Presented to the engine as a bearer token; absent for engines started without one. */
  api_key: z.string().optional(),
  /** "canary" on a canary's replica: it gets the model's canary share of requests, the others the rest. */
  arm: z.literal("canary").optional(),
});
export type RoutingReplica = z.infer<typeof routingReplicaSchema>;

export const routingExternalSchema = z.object({
  base_url: z.string(),
  /** The variable holding the provider's key, read from the gateway's own environment. */
  api_key_env: z.string().nullable(),
  /** The provider's name for the model, when it differs from ours. */
  model: z.string().nullable(),
});

export const routingAdapterSchema = z.object({
  name: z.string(),
  /** Position in the engine's adapter list (llama-server selects adapters by number). */
  index: z.number().int().min(0),
  scale: z.number().nullable(),
});

export type RoutingAdapter = z.infer<typeof routingAdapterSchema>;

/**
 * A ComfyUI model's workflow and where requests fill it in: every gateway
 * fills it in itself, so it travels with the table. Validated in full when
 * the model was added; read leniently here like the rest of the table.
 */
export const routingComfySchema = z.object({
  workflow: z.record(z.string(), z.looseObject({ class_type: z.string(), inputs: z.record(z.string(), z.unknown()) })),
  inputs: z.record(z.string(), z.string()),
  outputs: z.enum(comfyOutputs),
});
export type RoutingComfy = z.infer<typeof routingComfySchema>;

export const routingModelSchema = z.object({
  name: z.string(),
  /** Tokens one request may use (prompt + answer); null when the catalog does not say. */
  context: z.number().int().positive().nullable(),
  max_output: z.number().int().positive().nullable(),
  fallbacks: z.array(z.string()),
  /** Scaled from zero: a request with no ready replica reports demand and waits. */
  on_demand: z.boolean(),
  /** How long a request may wait for a first ready replica. */
  queue_timeout_ms: z.number().int().positive(),
  /** A mode this gateway does not know (a newer server's) is read as fewest in flight: any replica still answers. */
  routing: z.enum(routingModes).catch("least"),
  /** The engine of the model's first profile, for adapter selection; null for external models. */
  engine: z.enum(engineNames).nullable(),
  external: routingExternalSchema.nullable(),
  /** A local folder or URL where tokenizer.json and tokenizer_config.json may be found; null when unknown. */
  tokenizer: z.string().nullable(),
  adapters: z.array(routingAdapterSchema),
  replicas: z.array(routingReplicaSchema),
  /** Set for a ComfyUI model (images or image to 3D); null for text models. */
  comfy: routingComfySchema.nullish(),
  /**
   * Set for a text model whose engine pools rather than generates (an
   * embedding model, a reranker): the argument that makes it so and the
   * routes it serves, so a chat request is refused naming them rather than
   * sent to an engine that cannot answer it. Absent for a model that generates.
   */
  pooling: z.object({ flag: z.string(), routes: z.array(z.string()) }).optional(),
  /**
   * Why no replica will come, so a request is answered at once rather than
   * held for the queue deadline: placement refused the model (its latest
   * decision's reason), or it is kept unplaced on purpose (scaling 0/0).
   * Absent while it is placed, loading or waiting for room.
   */
  unavailable: z.string().nullish(),
  /** Seconds until the model's first loading replica should be ready, from its state and progress; absent when none loads. */
  loading_eta_s: z.number().int().positive().nullish(),
  /** Percent of requests (0-100) sent to the canary replicas while a canary runs; absent otherwise. */
  canary_weight: z.number().min(0).max(100).optional(),
});
export type RoutingModel = z.infer<typeof routingModelSchema>;

export const routingTableSchema = z.object({
  /** Grows with every change; a follower asks for anything after the one it holds. */
  revision: z.number().int().min(0),
  models: z.array(routingModelSchema),
  /** Alias → model name. */
  aliases: z.record(z.string(), z.string()),
  /**
   * The weights of `routing: cache` from the server's server.yaml, so every
   * gateway following it scores alike; absent from an older server, where a
   * gateway keeps the defaults.
   */
  cache_routing: z
    .object({ prefix_weight: z.number().min(0), queue_weight: z.number().min(0), cache_weight: z.number().min(0), cache_full: z.number().min(0).max(1) })
    .optional()
    .catch(undefined),
});
export type RoutingTable = z.infer<typeof routingTableSchema>;

export const emptyRoutingTable: RoutingTable = { revision: 0, models: [], aliases: {} };

/** How long a follower's GET /api/v1/routing?after=N may be held open when nothing changes. */
export const routingLongPollMs = 25_000;
