import type { Kysely } from "kysely";
import { redactStrings, type Audience } from "../catalog/redact.js";
import { DomainError } from "../errors/domain-error.js";
import type { StreamChange, StreamTopic } from "../protocol/console.js";
import type { EventView } from "../protocol/views.js";
import { readChangeSignatures, type ChangeSignatures } from "../store/change-signatures.js";
import { listEvents } from "../store/reconcile-rows.js";
import type { Database } from "../store/schema.js";

/** One open stream: it takes whole SSE messages, and answers false when it could not keep up and was closed. */
export interface ChangeSubscriber {
  readonly audience: Audience;
  send(chunk: string): boolean;
  /** The server is closing: end the stream. */
  close(): void;
}

export interface ChangeFeedOptions {
  /** How often the shared poll reads the signatures while anyone listens. */
  readonly pollMs: number;
  readonly pingMs: number;
  readonly maxSubscribers: number;
  /** The most event rows one `events` message carries; more since the last poll and the client refetches the list. */
  readonly maxEventsPerMessage: number;
  readonly onError: (error: unknown) => void;
}

export const defaultChangeFeedOptions: Omit<ChangeFeedOptions, "onError"> = { pollMs: 1000, pingMs: 15_000, maxSubscribers: 100, maxEventsPerMessage: 200 };

const signatureTopics = ["nodes", "models", "replicas", "keys", "canaries", "audit"] as const satisfies readonly StreamTopic[];

/**
 * The live-change stream's one source per server. While anyone listens, it
 * reads the store's change signatures once per `pollMs` (one query for every
 * listener, whatever their number) and tells every listener which
 * collections changed, so a change another server made reaches this
 * server's console too. A change answered by this server polls at once.
 */
export class ChangeFeed {
  readonly #db: Kysely<Database>;
  readonly #options: ChangeFeedOptions;
  readonly #subscribers = new Set<ChangeSubscriber>();
  readonly #revisions = new Map<StreamTopic, number>();
  #last: ChangeSignatures | undefined;
  #pollTimer: NodeJS.Timeout | undefined;
  #pingTimer: NodeJS.Timeout | undefined;
  #polling: Promise<void> | undefined;
  #again = false;
  #closed = false;

  constructor(db: Kysely<Database>, options: ChangeFeedOptions) {
    this.#db = db;
    this.#options = options;
  }

  get subscribers(): number {
    return this.#subscribers.size;
  }

  /** Adds a listener; refused past the cap, so open streams cannot take the server's sockets and memory without end. */
  subscribe(subscriber: ChangeSubscriber): () => void {
    if (this.#closed) {
      // Closing: the stream ends at once and the client reconnects, to this server once restarted or to another.
      subscriber.close();
      return () => undefined;
    }
    if (this.#subscribers.size >= this.#options.maxSubscribers) {
      throw new DomainError(
        "too_many_streams",
        `this server already has ${this.#options.maxSubscribers} live-change streams open, its limit`,
        "Close console tabs you do not use, or open the console on another server sharing the database; retry in a moment.",
      );
    }
    this.#subscribers.add(subscriber);
    if (this.#subscribers.size === 1) this.#start();
    return () => this.#remove(subscriber);
  }

  /** A change was made through this server: look now rather than at the next tick. */
  nudge(): void {
    if (this.#subscribers.size > 0) void this.#poll();
  }

  /** Ends every stream; the clients reconnect to whichever server answers. */
  close(): void {
    this.#closed = true;
    for (const subscriber of [...this.#subscribers]) subscriber.close();
    this.#subscribers.clear();
    this.#stop();
  }

  #remove(subscriber: ChangeSubscriber): void {
    if (!this.#subscribers.delete(subscriber)) return;
    if (this.#subscribers.size === 0) this.#stop();
  }

  #start(): void {
    this.#pollTimer = setInterval(() => void this.#poll(), this.#options.pollMs);
    this.#pingTimer = setInterval(() => this.#broadcast(() => ": ping\n\n"), this.#options.pingMs);
    this.#pollTimer.unref();
    this.#pingTimer.unref();
    void this.#poll();
  }

  #stop(): void {
    clearInterval(this.#pollTimer);
    clearInterval(this.#pingTimer);
    this.#pollTimer = undefined;
    this.#pingTimer = undefined;
  }

  /** One poll at a time; a nudge during a poll runs one more after it, so no change waits for the next tick. */
  #poll(): Promise<void> {
    if (this.#polling) {
      this.#again = true;
      return this.#polling;
    }
    this.#polling = (async () => {
      try {
        do {
          this.#again = false;
          await this.#pollOnce();
          // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- a nudge during the await sets it
        } while (this.#again && this.#subscribers.size > 0);
      } catch (error) {
        this.#options.onError(error);
      } finally {
        this.#polling = undefined;
      }
    })();
    return this.#polling;
  }

  async #pollOnce(): Promise<void> {
    const now = await readChangeSignatures(this.#db);
    const before = this.#last;
    this.#last = now;
    // The first reading is the baseline: a stream tells of changes after it opened.
    if (!before) return;
    for (const topic of signatureTopics) {
      if (now[topic] !== before[topic]) this.#announce(topic, {});
    }
    if (now.lastEventId > before.lastEventId) {
      const rows: EventView[] = await listEvents(this.#db, { afterId: before.lastEventId, limit: this.#options.maxEventsPerMessage });
      this.#announce("events", { events: rows });
    } else if (now.lastEventId < before.lastEventId) {
      // The log was emptied (a fresh database behind the same server): the list is different, with no new rows to show.
      this.#announce("events", { events: [] });
    }
  }

  #announce(topic: StreamTopic, extra: Omit<StreamChange, "revision">): void {
    const revision = (this.#revisions.get(topic) ?? 0) + 1;
    this.#revisions.set(topic, revision);
    const byAudience = new Map<Audience, string>();
    this.#broadcast((audience) => {
      let chunk = byAudience.get(audience);
      if (chunk === undefined) {
        // Event messages quote what the reconciler saw; they pass the same masking net as every API answer.
        const data = redactStrings({ revision, ...extra } satisfies StreamChange, audience);
        chunk = `event: ${topic}\ndata: ${JSON.stringify(data)}\n\n`;
        byAudience.set(audience, chunk);
      }
      return chunk;
    });
  }

  #broadcast(chunkFor: (audience: Audience) => string): void {
    for (const subscriber of [...this.#subscribers]) {
      if (!subscriber.send(chunkFor(subscriber.audience))) this.#remove(subscriber);
    }
  }
}
