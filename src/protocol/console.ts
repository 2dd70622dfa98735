import { z } from "zod";
import type { EventView } from "./views.js";

/**
 * What the web console reads from the server beyond the views every client
 * shares: who it is logged in as, the live-change stream, the per-model
 * series, and a model's headroom. Each answer has its zod schema beside its
 * type, so the console checks what it reads with the same definition the
 * server answers from.
 */

/** `GET /api/v1/session`: the token in use, so the console disables changes for a read-only one. */
export const sessionViewSchema = z.object({
  token: z.object({ name: z.string(), role: z.enum(["admin", "read"]) }),
});
export type SessionView = z.infer<typeof sessionViewSchema>;

/** The collections `GET /api/v1/stream` tells about: "this collection changed; fetch it again". */
export const streamTopics = ["nodes", "models", "replicas", "events", "keys", "canaries", "audit"] as const;
export type StreamTopic = (typeof streamTopics)[number];
export const streamTopicSchema = z.enum(streamTopics);

/**
 * The data of one stream message. `revision` rises with every change the
 * server has seen of that topic (it is this server's count, not the store's:
 * compare revisions of one connection only). An `events` message carries the
 * new event rows as `GET /api/v1/events` shows them, oldest first.
 */
export const streamChangeSchema = z.looseObject({
  revision: z.number().int().nonnegative(),
  events: z.array(z.looseObject({ id: z.number(), kind: z.string() })).optional(),
});
export type StreamChange = { revision: number; events?: EventView[] };

/** Every point of a series is one step of this many seconds. */
export const seriesStepSeconds = 10;
/** How many steps a series keeps: one hour. */
export const seriesSteps = 360;

/** One step of a series; the figures are null where no request finished in the step. */
export const seriesPointSchema = z.object({
  /** The step's start, epoch milliseconds. */
  t: z.number(),
  requests_per_s: z.number(),
  errors_per_s: z.number(),
  latency_p50_ms: z.number().nullable(),
  latency_p95_ms: z.number().nullable(),
  ttft_p50_ms: z.number().nullable(),
  ttft_p95_ms: z.number().nullable(),
  tokens_per_s: z.number(),
});
export type SeriesPoint = z.infer<typeof seriesPointSchema>;

/** `GET /api/v1/models/:name/series` (with `model`) and `GET /api/v1/series` (the whole gateway, no `model`). */
export const seriesViewSchema = z.object({
  model: z.string().optional(),
  step_seconds: z.number(),
  points: z.array(seriesPointSchema),
});
export type SeriesView = z.infer<typeof seriesViewSchema>;

/** What a replica holds on a card, in the planner's figures for its placement (the busiest card of the replica, as placement checks it). */
export const plannedMemorySchema = z.object({
  replica: z.string(),
  model: z.string(),
  weights_bytes: z.number(),
  kv_bytes: z.number(),
  overhead_bytes: z.number(),
});
export type PlannedMemoryView = z.infer<typeof plannedMemorySchema>;

/**
 * A card's memory three ways: what llmgw planned for its replicas, what the
 * card reports as used (nvidia-smi's memory.used; null from an agent that
 * does not report it), and what processes llmgw did not start hold (null
 * likewise). Placement counts the foreign part as taken.
 */
export const cardMemorySchema = z.object({
  total_bytes: z.number(),
  used_bytes: z.number().nullable(),
  foreign_bytes: z.number().nullable(),
  planned: z.array(plannedMemorySchema),
});
export type CardMemoryUseView = z.infer<typeof cardMemorySchema>;

/** One card of `GET /api/v1/card-memory`. */
export const cardMemoryViewSchema = cardMemorySchema.extend({ index: z.number() });
export type CardMemoryView = z.infer<typeof cardMemoryViewSchema>;

/**
 * `GET /api/v1/card-memory`: every node's cards with the planner's share of
 * each replica on them, what the card reports as used and what other
 * processes hold. A replica whose model's files have not been read yet (or
 * which the planner does not price: ComfyUI) holds its card with no share listed.
 */
export const cardMemoryAnswerSchema = z.object({
  nodes: z.array(z.object({ node: z.string(), cards: z.array(cardMemoryViewSchema) })),
});
export type CardMemoryAnswer = z.infer<typeof cardMemoryAnswerSchema>;

/** `GET /api/v1/models/:name/headroom`: how many more replicas fit now, and on which nodes. */
export const headroomViewSchema = z.object({
  model: z.string(),
  profile: z.string(),
  more_replicas: z.number(),
  nodes: z.array(z.object({ node: z.string(), replicas: z.number() })),
  reasons: z.array(z.string()),
});
export type HeadroomView = z.infer<typeof headroomViewSchema>;
