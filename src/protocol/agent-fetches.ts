import { z } from "zod";
import { byteCount, prose, protocolField } from "./agent-fields.js";

/**
 * The agent protocol's fetches: the server asks an agent to put a source in
 * its weights cache without starting an engine (`ctl model pull`).
 *   POST /agent/v1/fetches  StartFetchRequest → 202 FetchAnswer
 *   GET  /agent/v1/fetches  → FetchList
 */

/** A source as the server sends it to an agent: resolved (no `mirror:`), bounded like a URL. */
const fetchSourceSchema = z.string().min(1, { message: "the source is empty" }).max(4096, { message: "the source is longer than 4096 characters" });

export const fetchStates = ["fetching", "cached", "failed"] as const;
export type FetchState = (typeof fetchStates)[number];

/**
 * One source an agent was asked to put in its weights cache ahead of any
 * replica (`ctl model pull`). Kept by the agent in memory: after an agent
 * restart it knows none, and a pull asked again resumes from the partial
 * files on disk.
 */
export const fetchStatusSchema = z.object({
  /** As the server sent it, so the server can match it to the catalog's source. */
  source: fetchSourceSchema,
  state: z.enum(fetchStates),
  bytes_done: byteCount,
  /** Undefined until every file's size is known. */
  bytes_total: byteCount.optional(),
  /** Once cached: the bytes the weights take on the node's disk. */
  size_bytes: byteCount.optional(),
  /** Cached before this pull asked: nothing was downloaded. */
  already_cached: z.boolean().optional(),
  /** A simulated agent that pretends its weights (--simulate without --simulate-fetch): nothing was downloaded. */
  simulated: z.boolean().optional(),
  /** Failed: a sentence naming the file, the node and what to do. */
  reason: prose.optional(),
  since: z.iso.datetime({ offset: true }),
});
export type FetchStatus = z.infer<typeof fetchStatusSchema>;

export const startFetchRequestSchema = z.object({
  protocol: protocolField,
  source: fetchSourceSchema,
});
export type StartFetchRequest = z.infer<typeof startFetchRequestSchema>;

export const fetchAnswerSchema = z.object({
  protocol: protocolField,
  fetch: fetchStatusSchema,
});

/** An agent keeps at most this many fetches listed; more is a malformed message. */
export const maxFetchesListed = 1024;

export const fetchListSchema = z.object({
  protocol: protocolField,
  fetches: z.array(fetchStatusSchema).max(maxFetchesListed),
});
export type FetchList = z.infer<typeof fetchListSchema>;
