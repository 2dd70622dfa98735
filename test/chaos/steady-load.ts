import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError } from "openai";
import { FailureCounter } from "./chaos-report.js";

/**
 * The chaos suite's client: a steady load of chat completions through a
 * gateway, half of them streamed, from a few workers at once, until stopped or
 * until its bounds (a count and a time) end it. Every request is recorded with
 * when it started and ended and, when it failed, why, so a scenario can check
 * its rule (which failures are allowed, and when) and report the time to
 * recover.
 */

export interface LoadOptions {
  /** The gateway's base URL, ending in /v1. */
  readonly baseURL: string;
  readonly apiKey?: string;
  readonly model: string;
  /** Requests in flight at once. */
  readonly concurrency?: number;
  /** The load ends by itself after this many requests... */
  readonly maxRequests?: number;
  /** ...or this long after it started, whichever comes first. */
  readonly maxMs?: number;
  /** Tokens asked of each answer: with the engine's speed, how long each request stays in flight. */
  readonly maxTokens?: number;
  /** A pause between a worker's requests, so the load is steady rather than as fast as two cores go. */
  readonly pauseMs?: number;
  /** A pause after a failure, so an outage is crossed at a steady pace instead of spun through in refusals. */
  readonly pauseAfterFailureMs?: number;
  /** A request with no answer in this long counts as hung: the bound that fails a hang, not a speed check. */
  readonly hangBoundMs?: number;
}

/** One request, as the client saw it. */
export interface LoadRecord {
  readonly index: number;
  readonly stream: boolean;
  readonly startedAt: number;
  endedAt: number;
  ok: boolean;
  /** Why it failed, in the report's words; undefined for a success. */
  reason?: string;
  /**
   * For a stream: its chunks received before it ended (or failed), the engine's opening role-only chunk
   * included: once that has reached the client the stream has begun and cannot be retried elsewhere.
   */
  chunks: number;
  /** The stream ended with the gateway's SSE error event (a cut it told the client about). */
  errorEvent: boolean;
}

/** The reason of a stream cut after it had sent bytes, and told with an error event: the one failure an engine's death may cause. */
export const cutStreamReason = "stream cut after its first bytes, ended with an error event";

const streamCutWithoutEventPrefix = "stream cut after its first bytes without an error event ";

/** The socket closed after the answer's head and before any content: only a process dying mid-answer does that. */
const answerCutBeforeContentReason = "connection cut after the answer began, before any content (terminated)";

/**
 * A request lost with its connection: refused or reset before an answer, an answer whose socket closed after
 * its head and before any content, or a stream whose socket closed under it after it had begun (undici ends
 * the body with "terminated"). What a dead server may cause; a hang, an HTTP
 * error or a stream ended cleanly without its finish reason is none of these.
 */
export function lostWithConnection(record: LoadRecord): boolean {
  if (record.ok || record.reason === undefined) return false;
  if (record.reason.startsWith("connection failed") || record.reason === answerCutBeforeContentReason) return true;
  return record.stream && !record.errorEvent && record.reason === `${streamCutWithoutEventPrefix}(terminated)`;
}

export interface LoadResult {
  readonly sent: number;
  readonly succeeded: number;
  readonly failed: number;
  readonly failures: FailureCounter;
  readonly records: readonly LoadRecord[];
  /** How the load ended: "stopped" by the scenario, or at one of its bounds. */
  readonly ended: string;
}

function reasonOf(error: unknown, record: LoadRecord, hangBoundMs: number): string {
  if (error instanceof APIConnectionTimeoutError) return `hung (no answer in ${hangBoundMs / 1000} s)`;
  if (error instanceof APIConnectionError) {
    const cause = (error as { cause?: { code?: string; cause?: { code?: string } } }).cause;
    return `connection failed (${cause?.code ?? cause?.cause?.code ?? error.message})`;
  }
  if (error instanceof APIError) {
    // The SDK throws an APIError without a status for an error event inside a stream that had begun.
    if (error.status === undefined) {
      record.errorEvent = true;
      return record.chunks > 0 ? cutStreamReason : `stream ended with an error event before any chunk (${error.code ?? error.message})`;
    }
    return `HTTP ${error.status}${error.code ? ` ${error.code}` : ""}`;
  }
  const message = (error as Error).message;
  if (record.stream && record.chunks > 0) return `${streamCutWithoutEventPrefix}(${message})`;
  // undici ends a body whose socket closed under it with "terminated": the answer had begun, no content had come.
  if (message === "terminated") return answerCutBeforeContentReason;
  return `other: ${message}`;
}

export class SteadyLoad {
  readonly records: LoadRecord[] = [];
  readonly failures = new FailureCounter();
  #succeeded = 0;
  #stopping = false;
  #ended = "stopped";
  readonly #startedAt = Date.now();
  readonly #client: OpenAI;
  readonly #workers: Promise<void>;
  readonly #options: Required<Omit<LoadOptions, "apiKey">>;

  constructor(options: LoadOptions) {
    this.#options = {
      concurrency: 4,
      maxRequests: 20_000,
      maxMs: 120_000,
      maxTokens: 24,
      pauseMs: 10,
      pauseAfterFailureMs: 100,
      hangBoundMs: 15_000,
      ...options,
    };
    // No retries in the client: what the gateway does not absorb must show as a failure.
    this.#client = new OpenAI({ baseURL: options.baseURL, apiKey: options.apiKey ?? "unused", maxRetries: 0, timeout: this.#options.hangBoundMs });
    this.#workers = Promise.all(Array.from({ length: this.#options.concurrency }, () => this.#worker())).then(() => undefined);
  }

  get sent(): number {
    return this.records.length;
  }

  get succeeded(): number {
    return this.#succeeded;
  }

  /** Requests started at or after `at` (a Date.now()). */
  sentSince(at: number): number {
    return this.records.filter((record) => record.startedAt >= at).length;
  }

  /** Requests started at or after `at` and answered whole. */
  succeededSince(at: number): number {
    return this.records.filter((record) => record.startedAt >= at && record.ok).length;
  }

  /** When the first request started at or after `at` was answered whole; undefined if none was yet. */
  firstSuccessStartedAfter(at: number): number | undefined {
    const answered = this.records.filter((record) => record.ok && record.startedAt >= at).map((record) => record.endedAt);
    return answered.length === 0 ? undefined : Math.min(...answered);
  }

  /** Requests in flight at `at` (started before it, ended after it or not yet), and how many of them were streams. */
  inFlightAt(at: number): { requests: number; streams: number } {
    const open = this.records.filter((record) => record.startedAt <= at && (record.endedAt === 0 || record.endedAt >= at));
    return { requests: open.length, streams: open.filter((record) => record.stream).length };
  }

  /** Resolves once `check` holds; rejects when the load ended at a bound first, or after `timeoutMs`. */
  async until(check: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (check()) return;
      if (this.#stopping) throw new Error(`the load ended (${this.#ended}, ${this.sent} sent) before ${what}`);
      if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (${this.sent} sent, ${this.failures.total} failed)`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** Ends the load: the requests in flight finish, none is started. */
  async stop(): Promise<LoadResult> {
    this.#stopping = true;
    await this.#workers;
    return { sent: this.sent, succeeded: this.#succeeded, failed: this.failures.total, failures: this.failures, records: this.records, ended: this.#ended };
  }

  async #worker(): Promise<void> {
    const options = this.#options;
    while (!this.#stopping) {
      if (this.records.length >= options.maxRequests) {
        this.#end(`at its bound of ${options.maxRequests} requests`);
        break;
      }
      if (Date.now() - this.#startedAt >= options.maxMs) {
        this.#end(`at its bound of ${options.maxMs / 1000} s`);
        break;
      }
      const record: LoadRecord = { index: this.records.length, stream: this.records.length % 2 === 1, startedAt: Date.now(), endedAt: 0, ok: false, chunks: 0, errorEvent: false };
      this.records.push(record);
      await this.#one(record);
      await new Promise((resolve) => setTimeout(resolve, record.ok ? options.pauseMs : options.pauseAfterFailureMs));
    }
  }

  #end(why: string): void {
    if (!this.#stopping) this.#ended = why;
    this.#stopping = true;
  }

  async #one(record: LoadRecord): Promise<void> {
    const request = { model: this.#options.model, max_tokens: this.#options.maxTokens, messages: [{ role: "user" as const, content: "Say hello." }] };
    try {
      if (record.stream) {
        const chunks = await this.#client.chat.completions.create({ ...request, stream: true });
        let finished = false;
        for await (const chunk of chunks) {
          const choice = chunk.choices[0];
          record.chunks += 1;
          if (choice?.finish_reason) finished = true;
        }
        // A stream that ends without its finish reason was cut, even when the connection closed cleanly.
        if (!finished) throw new Error(`a stream ended after ${record.chunks} chunks without a finish reason`);
      } else {
        const answer = await this.#client.chat.completions.create(request);
        if (!answer.choices[0]?.finish_reason || !answer.choices[0].message.content) throw new Error("an answer without its content or finish reason");
      }
      record.ok = true;
      this.#succeeded += 1;
    } catch (error) {
      record.reason = reasonOf(error, record, this.#options.hangBoundMs);
      this.failures.count(record.reason);
    } finally {
      record.endedAt = Date.now();
    }
  }
}

/** Seconds, to one decimal, from `from` to `to`; "did not happen" when `to` is missing. */
export function seconds(from: number | undefined, to: number | undefined): string {
  return from === undefined || to === undefined ? "did not happen" : `${((to - from) / 1000).toFixed(1)} s`;
}
