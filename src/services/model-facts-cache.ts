import type { ModelFacts } from "../plan/index.js";

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
 * turn, in the order asked; a queued read counts as under way. A queued read
 * is only its source's name: with 5,000 sources behind a hub this machine
 * cannot reach, a promise and closures for each held 6 MB for as long as the
 * queue took to drain.
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
  /** Sources waiting their turn, in the order asked. */
  private readonly queued = new Set<string>();
  /** Sources being read now: at most readsAtOnce. */
  private readonly inFlight = new Set<string>();
  /** Who waits for a source's read to settle (whenRead), queued or under way. */
  private readonly waiters = new Map<string, Set<() => void>>();

  constructor(
    private readonly read: ModelFactsReader,
    private readonly onRead: () => void,
    private readonly now: () => number = Date.now,
    private readonly readsAtOnce = sourceReadsAtOnce,
  ) {}

  /** The facts when known; otherwise undefined, and a read is queued. */
  get(source: string): ModelFacts | undefined {
    const known = this.facts.get(source);
    if (known) return known;
    if (this.isReading(source) || (this.unreadableUntil.get(source) ?? 0) > this.now()) return undefined;
    this.queued.add(source);
    // Started on a later tick: get() is called from a reconcile pass, which the reader's own work must not run inside.
    if (this.queued.size === 1) queueMicrotask(() => this.startReads());
    return undefined;
  }

  /**
   * The facts, waiting up to `withinMs` for a read under way (or queued
   * now); undefined when the source is unreadable or slower than that.
   */
  async whenRead(source: string, withinMs: number): Promise<ModelFacts | undefined> {
    const known = this.get(source);
    if (known) return known;
    if (!this.isReading(source)) return undefined;
    const waiting = this.waiters.get(source) ?? new Set<() => void>();
    this.waiters.set(source, waiting);
    let done: () => void = () => undefined;
    const settled = new Promise<void>((resolve) => (done = resolve));
    waiting.add(done);
    const timer = setTimeout(done, withinMs);
    await settled;
    clearTimeout(timer);
    waiting.delete(done);
    if (waiting.size === 0 && this.waiters.get(source) === waiting) this.waiters.delete(source);
    return this.facts.get(source);
  }

  /** A read of the source is queued or under way. */
  reading(source: string): boolean {
    return this.isReading(source);
  }

  private isReading(source: string): boolean {
    return this.queued.has(source) || this.inFlight.has(source);
  }

  private startReads(): void {
    for (const source of this.queued) {
      if (this.inFlight.size >= this.readsAtOnce) return;
      this.queued.delete(source);
      this.inFlight.add(source);
      void this.readOne(source);
    }
  }

  private async readOne(source: string): Promise<void> {
    let read = false;
    try {
      this.facts.set(source, await this.read(source));
      read = true;
    } catch {
      this.unreadableUntil.set(source, this.now() + retryUnreadableMs);
    } finally {
      this.inFlight.delete(source);
      for (const wake of this.waiters.get(source) ?? []) wake();
      this.startReads();
    }
    if (read) this.onRead();
  }
}
