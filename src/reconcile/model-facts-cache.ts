import pLimit, { type LimitFunction } from "p-limit";
import type { ModelFacts } from "../plan/model-facts.js";

/** Reads a model's files (config.json or GGUF metadata and the weights' headers): the only I/O placement's memory check needs. */
export type ModelFactsReader = (source: string) => Promise<ModelFacts>;

/** A source that could not be read is tried again after this long (a mirror that was down, a token added since). */
const retryUnreadableMs = 5 * 60_000;

/**
 * How many sources are read at once. A catalog of 2,000 models read on a
 * server's first pass opened 2,000 TLS connections together: on a machine
 * that could not reach the hub, 1,849 sockets with their DNS lookups were
 * still held a minute later, most of the server's memory past its heap, and
 * their handshakes took a core from heartbeats and reads. The rest wait their
 * turn, in the order asked; a queued read counts as under way.
 */
export const sourceReadsAtOnce = 16;

/**
 * The facts of each model source, read in the background: a reconcile pass
 * never waits on a hub or a mirror. Until a source has been read, placement
 * checks card counts and classes only; once read, `onRead` wakes the
 * reconciler and each card is checked to hold what one rank needs.
 */
export class ModelFactsCache {
  private readonly facts = new Map<string, ModelFacts>();
  private readonly unreadableUntil = new Map<string, number>();
  private readonly reading = new Map<string, Promise<void>>();
  private readonly limit: LimitFunction;

  constructor(
    private readonly read: ModelFactsReader,
    private readonly onRead: () => void,
    private readonly now: () => number = Date.now,
    readsAtOnce = sourceReadsAtOnce,
  ) {
    this.limit = pLimit(readsAtOnce);
  }

  /** The facts when known; otherwise undefined, and a read is started. */
  get(source: string): ModelFacts | undefined {
    const known = this.facts.get(source);
    if (known) return known;
    if (this.reading.has(source) || (this.unreadableUntil.get(source) ?? 0) > this.now()) return undefined;
    const reading = this.limit(() => this.read(source))
      .then(
        (facts) => {
          this.facts.set(source, facts);
          this.onRead();
        },
        () => {
          this.unreadableUntil.set(source, this.now() + retryUnreadableMs);
        },
      )
      .finally(() => this.reading.delete(source));
    this.reading.set(source, reading);
    return undefined;
  }

  /**
   * The facts, waiting up to `withinMs` for a read under way (or started
   * now); undefined when the source is unreadable or slower than that.
   */
  async whenRead(source: string, withinMs: number): Promise<ModelFacts | undefined> {
    const known = this.get(source);
    if (known) return known;
    const reading = this.reading.get(source);
    if (reading === undefined) return undefined;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, withinMs)));
    await Promise.race([reading, late]);
    clearTimeout(timer);
    return this.facts.get(source);
  }
}
