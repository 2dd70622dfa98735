import { usageBatchLimit, usageMinute, type UsageIncrement } from "../../protocol/index.js";
import type { UsageJournal } from "./usage-journal.js";

interface Tally {
  key: string;
  model: string;
  minute: string;
  requests: number;
  errors: number;
  promptTokens: number;
  completionTokens: number;
}

export interface UsageCount {
  readonly errors: number;
  readonly promptTokens: number;
  readonly completionTokens: number;
}

/**
 * Usage counted in memory per key, model and minute, and handed to the
 * store in batches: a database write per request would put the store's
 * latency (and its failures) on every answer. A batch that cannot be written
 * is kept and merged into the next one, so an outage of the database delays
 * usage but does not lose it. With a journal, each request's usage is also on
 * disk before its answer ends (count's promise), so a crash loses none: the
 * next process adopts what was not yet in the store (see UsageJournal).
 */
export class UsageLedger {
  private pending = new Map<string, Tally>();
  private writing: Promise<void> = Promise.resolve();
  /** Memoised minute label: toISOString once a minute, not once a request. */
  private minuteStart = -1;
  private minuteLabel = "";

  constructor(
    private readonly write: (increments: readonly UsageIncrement[]) => Promise<void>,
    private readonly now: () => number = Date.now,
    private readonly journal?: UsageJournal,
  ) {}

  /** Counts one request; with a journal, the promise settles once its usage is on disk (end the answer after it). */
  count(key: string, model: string, usage: UsageCount): Promise<void> | undefined {
    const minute = this.currentMinute();
    this.countAt(key, model, minute, usage);
    return this.journal?.append({ key, model, minute, ...usage });
  }

  private countAt(key: string, model: string, minute: string, usage: UsageCount): void {
    const id = `${key}\u0000${model}\u0000${minute}`;
    let tally = this.pending.get(id);
    if (!tally) {
      tally = { key, model, minute, requests: 0, errors: 0, promptTokens: 0, completionTokens: 0 };
      this.pending.set(id, tally);
    }
    tally.requests += 1;
    tally.errors += usage.errors;
    tally.promptTokens += usage.promptTokens;
    tally.completionTokens += usage.completionTokens;
  }

  /** Requests counted and not yet written (for tests and shutdown messages). */
  get pendingRequests(): number {
    let total = 0;
    for (const tally of this.pending.values()) total += tally.requests;
    return total;
  }

  /**
   * Writes what was counted so far. Flushes run one after another, so a
   * shutdown's last flush never races a periodic one. Throws when the store
   * refuses; the counts stay pending for the next flush.
   */
  flush(): Promise<void> {
    const next = this.writing
      .catch(() => undefined)
      .then(() => {
        // What crashed processes left is written with this batch; in this turn, so the seal below covers it.
        this.journal?.adoptAbandoned((record) => this.countAt(record.key, record.model, record.minute, record));
        return this.writeBatch();
      });
    this.writing = next;
    return next;
  }

  private async writeBatch(): Promise<void> {
    if (this.pending.size === 0) return;
    const sealed = this.journal?.seal();
    const batch = [...this.pending.values()];
    this.pending = new Map();
    // In parts of a bounded size; a part that fails goes back with everything
    // after it, while the parts already written stay written (never counted twice).
    for (let start = 0; start < batch.length; start += usageBatchLimit) {
      try {
        await this.write(batch.slice(start, start + usageBatchLimit));
      } catch (error) {
        for (const tally of batch.slice(start)) this.restore(tally);
        throw error;
      }
    }
    if (sealed) this.journal?.release(sealed);
  }

  /** Writes what is left and closes the journal: after the last answer. */
  async close(): Promise<void> {
    await this.flush();
    await this.journal?.close();
  }

  private restore(tally: Tally): void {
    const id = `${tally.key}\u0000${tally.model}\u0000${tally.minute}`;
    const newer = this.pending.get(id);
    if (!newer) {
      this.pending.set(id, tally);
      return;
    }
    newer.requests += tally.requests;
    newer.errors += tally.errors;
    newer.promptTokens += tally.promptTokens;
    newer.completionTokens += tally.completionTokens;
  }

  private currentMinute(): string {
    const now = this.now();
    const start = now - (now % 60_000);
    if (start !== this.minuteStart) {
      this.minuteStart = start;
      this.minuteLabel = usageMinute(start);
    }
    return this.minuteLabel;
  }
}
