import type { UsageIncrement } from "../../protocol/index.js";
import type { UsageSync } from "../../catalog/index.js";
import { UsageJournal } from "./usage-journal.js";
import { UsageLedger, type UsageCount } from "./usage-ledger.js";

export interface UsageBookOptions {
  /** How often counted usage is written to the store. */
  readonly flushIntervalMs?: number;
  readonly now?: () => number;
  /**
   * Where each answered request's usage is kept on disk until the store has
   * it, so a crash loses none. Without it, usage counted since the last
   * batch is lost when the process is killed.
   */
  readonly journalDirectory?: string | undefined;
  /** What each answer waits for in the journal (see UsageSync); write unless said. */
  readonly journalSync?: UsageSync | undefined;
  /** Flush failures off the request path: logged, never thrown at a client. */
  readonly onBackgroundError?: (error: unknown, during: "writing usage") => void;
}

export const defaultUsageFlushMs = 5000;

/**
 * The usage a gateway process counts, whichever policy counts it: a ledger
 * written to the store every few seconds, and a journal that holds each
 * request until then. The first batch is written at start, so what an earlier
 * process left in the journal reaches the store at once.
 */
export class UsageBook {
  readonly #ledger: UsageLedger;
  #timer: NodeJS.Timeout | undefined;

  private constructor(write: (increments: readonly UsageIncrement[]) => Promise<void>, options: UsageBookOptions) {
    const report = options.onBackgroundError ?? (() => undefined);
    const journal = options.journalDirectory === undefined ? undefined : UsageJournal.open(options.journalDirectory, { onError: (error) => report(error, "writing usage"), sync: options.journalSync ?? "write" });
    this.#ledger = new UsageLedger(write, options.now, journal);
  }

  static async start(write: (increments: readonly UsageIncrement[]) => Promise<void>, options: UsageBookOptions = {}): Promise<UsageBook> {
    const book = new UsageBook(write, options);
    const report = options.onBackgroundError ?? (() => undefined);
    // A store that refuses now keeps the adopted usage in memory and in the journal for the next round.
    await book.flush().catch((error: unknown) => report(error, "writing usage"));
    book.#timer = setInterval(() => void book.flush().catch((error: unknown) => report(error, "writing usage")), options.flushIntervalMs ?? defaultUsageFlushMs);
    // Background work must not keep a finished process alive.
    book.#timer.unref();
    return book;
  }

  /** Counts one request; a promise while its usage is not yet on disk (the answer's last byte waits for it). */
  count(key: string, model: string, usage: UsageCount): Promise<void> | undefined {
    return this.#ledger.count(key, model, usage);
  }

  get pendingRequests(): number {
    return this.#ledger.pendingRequests;
  }

  /** Writes counted usage now (before a usage query). */
  flush(): Promise<void> {
    return this.#ledger.flush();
  }

  /** Stops the timer and writes what is left; after the last answer. */
  async close(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#ledger.close();
  }
}
