import type { ModelFacts } from "../plan/model-facts.js";

/** Reads a model's files (config.json or GGUF metadata and the weights' headers): the only I/O placement's memory check needs. */
export type ModelFactsReader = (source: string) => Promise<ModelFacts>;

/** A source that could not be read is tried again after this long (a mirror that was down, a token added since). */
const retryUnreadableMs = 5 * 60_000;

/**
 * The facts of each model source, read in the background: a reconcile pass
 * never waits on a hub or a mirror. Until a source has been read, placement
 * checks card counts and classes only; once read, `onRead` wakes the
 * reconciler and each card is checked to hold what one rank needs.
 */
export class ModelFactsCache {
  private readonly facts = new Map<string, ModelFacts>();
  private readonly unreadableUntil = new Map<string, number>();
  private readonly reading = new Set<string>();

  constructor(
    private readonly read: ModelFactsReader,
    private readonly onRead: () => void,
    private readonly now: () => number = Date.now,
  ) {}

  /** The facts when known; otherwise undefined, and a read is started. */
  get(source: string): ModelFacts | undefined {
    const known = this.facts.get(source);
    if (known) return known;
    if (this.reading.has(source) || (this.unreadableUntil.get(source) ?? 0) > this.now()) return undefined;
    this.reading.add(source);
    void this.read(source)
      .then(
        (facts) => {
          this.facts.set(source, facts);
          this.onRead();
        },
        () => this.unreadableUntil.set(source, this.now() + retryUnreadableMs),
      )
      .finally(() => this.reading.delete(source));
    return undefined;
  }
}
