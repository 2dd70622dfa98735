import { z } from "zod";
import { DomainError } from "../errors/light.js";
import { boundedDurationSchema, formatDuration, parseDuration } from "./duration.js";

/**
 * The limits against abuse of every port that carries the gateway (server.yaml's
 * `limits:`, or `llmgw gateway`'s flags of the same names), resolved with their
 * defaults. Each bounds what one client can make the server hold: memory for a
 * body or a head, a connection kept open by a slow or idle client, a share of
 * the engines' batch.
 */
export interface ServerLimits {
  /** The largest body of a /v1 request. */
  readonly bodyBytes: number;
  /** The largest body of an admin API request. */
  readonly adminBodyBytes: number;
  /** The largest request head (request line and headers); longer heads are answered 431. */
  readonly headerBytes: number;
  /** How long a request's head may take to arrive (408 past it). */
  readonly headerTimeoutMs: number;
  /** How long a whole request (head and body) may take to arrive (408 past it). */
  readonly requestTimeoutMs: number;
  /** How long a kept-alive connection may sit with no request before it is closed. */
  readonly idleTimeoutMs: number;
  /** Open connections per port; new ones past it are closed at once. */
  readonly connections: number;
  /** Requests one gateway key may have in flight at once; one more is answered 429. */
  readonly requestsPerKey: number;
}

const mebibyte = 1024 * 1024;

export { mostRequestsPerKey } from "./limit-bounds.js";
import { mostRequestsPerKey } from "./limit-bounds.js";

/**
 * The values in force before `limits:` existed, kept so a server.yaml
 * without the section runs as before. requestsPerKey is new: vLLM's default
 * batch (max_num_seqs) is 256 sequences, so a key at the cap can fill one
 * replica's batch but not hold every replica of a fleet; a client past it
 * is a loop gone wrong more often than a real workload.
 */
export const defaultServerLimits: ServerLimits = Object.freeze({
  // OpenAI's bodies are small; a long context of a million tokens is a few MB.
  bodyBytes: 32 * mebibyte,
  // A model entry with many profiles is a few KB.
  adminBodyBytes: 4 * mebibyte,
  // Node's own default (--max-http-header-size).
  headerBytes: 16 * 1024,
  headerTimeoutMs: 10_000,
  requestTimeoutMs: 60_000,
  // Fastify's default keep-alive timeout: longer than the 60 s idle timeout of most load balancers, so they close first.
  idleTimeoutMs: 72_000,
  connections: 10_000,
  requestsPerKey: 256,
});

const wholeNumber = (what: string, minimum: number, maximum: number, why: string) => {
  const message = `${what}, ${minimum} to ${maximum} (${why})`;
  return z.number({ message }).int({ message }).min(minimum, { message }).max(maximum, { message });
};

const inFlightMessage = `requests this key may have in flight at once, a whole number from 1 to ${mostRequestsPerKey} (leave it out for the gateway's limits.requests_per_key)`;

/** A gateway key's own cap on requests in flight (`max_in_flight`), in its place of limits.requests_per_key: lower or higher. */
export const keyMaxInFlightSchema = z.number({ message: inFlightMessage }).int({ message: inFlightMessage }).min(1, { message: inFlightMessage }).max(mostRequestsPerKey, { message: inFlightMessage });

/** server.yaml's `limits:`; every key optional, its default in defaultServerLimits. */
export const limitsSchema = z.strictObject({
  body_bytes: wholeNumber("the largest request body in bytes", 1024, 1024 * mebibyte, "a body is held in memory whole: past 1 GiB a few requests exhaust the heap").optional(),
  header_bytes: wholeNumber("the largest request head in bytes", 1024, mebibyte, "a head past 1 MiB is no client's; an OpenAI client's is under 1 KiB").optional(),
  header_timeout: boundedDurationSchema(1000, 600_000, "how long a request's head may take to arrive").optional(),
  request_timeout: boundedDurationSchema(1000, 3_600_000, "how long a whole request may take to arrive; an answer's own time is not counted").optional(),
  idle_timeout: boundedDurationSchema(1000, 3_600_000, "how long a kept-alive connection may wait for its next request").optional(),
  connections: wholeNumber("a whole number of open connections per port", 1, 1_000_000, "past a million the process runs out of file descriptors first").optional(),
  requests_per_key: wholeNumber("a whole number of requests in flight per gateway key", 1, mostRequestsPerKey, "more than a port holds connections").optional(),
});
export type LimitsInput = z.infer<typeof limitsSchema>;

/**
 * The limits with defaults filled in. `where` names the place a refusal
 * points at: "server.yaml: limits." for the file, "--" for the gateway's
 * flags (their names are the keys' with - for _).
 */
export function resolveLimits(input: LimitsInput | undefined, where: (key: keyof LimitsInput) => string): ServerLimits {
  const duration = (text: string | undefined, fallback: number) => (text === undefined ? fallback : (parseDuration(text) as number));
  const headerTimeoutMs = duration(input?.header_timeout, defaultServerLimits.headerTimeoutMs);
  const requestTimeoutMs = duration(input?.request_timeout, defaultServerLimits.requestTimeoutMs);
  // Node refuses to start a server whose head may take longer than its whole request; so is it refused here, by name.
  if (headerTimeoutMs > requestTimeoutMs) {
    throw new DomainError(
      "config_invalid",
      `${where("header_timeout")} ${formatDuration(headerTimeoutMs)} is longer than ${where("request_timeout")} ${formatDuration(requestTimeoutMs)}: the head is part of the request`,
      `Give ${where("header_timeout")} at most ${formatDuration(requestTimeoutMs)}, or raise ${where("request_timeout")}.`,
    );
  }
  return Object.freeze({
    bodyBytes: input?.body_bytes ?? defaultServerLimits.bodyBytes,
    // One setting for both: whoever raises (or lowers) the body limit means every body the port reads.
    adminBodyBytes: input?.body_bytes ?? defaultServerLimits.adminBodyBytes,
    headerBytes: input?.header_bytes ?? defaultServerLimits.headerBytes,
    headerTimeoutMs,
    requestTimeoutMs,
    idleTimeoutMs: duration(input?.idle_timeout, defaultServerLimits.idleTimeoutMs),
    connections: input?.connections ?? defaultServerLimits.connections,
    requestsPerKey: input?.requests_per_key ?? defaultServerLimits.requestsPerKey,
  });
}

/** The keys of `limits:`, in the order the docs and the flags list them. */
export const limitKeys = Object.keys(limitsSchema.shape) as (keyof LimitsInput)[];

/**
 * Limits given as text (`llmgw gateway --body-bytes 1048576 --header-timeout 5s`),
 * checked by the same rules as server.yaml's and resolved with the same
 * defaults; a refusal names the place `where` gives for the key.
 */
export function limitsFromText(values: Partial<Record<keyof LimitsInput, string>>, where: (key: keyof LimitsInput) => string): ServerLimits {
  const input: Record<string, unknown> = {};
  for (const key of limitKeys) {
    const text = values[key];
    if (text === undefined) continue;
    const field = limitsSchema.shape[key];
    // Counts are numbers in YAML; on a command line every value is text. Durations stay text ("10s").
    const isCount = !key.endsWith("_timeout");
    const value = isCount && /^\d+$/.test(text.trim()) ? Number(text.trim()) : text;
    const checked = field.safeParse(value);
    if (!checked.success) {
      throw new DomainError("config_invalid", `${where(key)} ${text}: expected ${checked.error.issues[0]?.message ?? "another value"}`, `Give ${where(key)} a value in that range, or leave it out for the default.`);
    }
    input[key] = checked.data;
  }
  return resolveLimits(input as LimitsInput, where);
}

/** Bytes as a person writes them: `32 MiB`, `16 KiB`, or `1500 bytes` when neither divides. */
export function formatBytes(bytes: number): string {
  if (bytes >= mebibyte && bytes % mebibyte === 0) return `${bytes / mebibyte} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}
