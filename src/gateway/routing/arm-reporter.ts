import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import type { ArmSlotReport } from "../../protocol/index.js";
import { armSlotMs, type ArmStats } from "./arm-stats.js";

/** How often a gateway reports its per-arm counts: a gate decides within a few seconds of the numbers. */
const reportEveryMs = 5000;

/** A name for this gateway process's reports: stable for its life, distinct from every other gateway's. */
export function gatewayReportId(): string {
  return `${hostname()}-${process.pid}-${randomBytes(3).toString("hex")}`;
}

/**
 * Sends what a gateway counted per arm, every few seconds: the slots that
 * started since the last successful report, and the one that was still
 * filling then (a slot reported again replaces its earlier report). A failed
 * send is covered by the next one, since it reaches back to the last success.
 */
export class ArmReporter {
  #timer: NodeJS.Timeout | undefined;
  #sentUpTo = 0;
  #sending: Promise<void> | undefined;

  constructor(
    private readonly stats: ArmStats,
    private readonly send: (slots: readonly ArmSlotReport[]) => Promise<void>,
    private readonly onFailure: (error: unknown) => void,
    private readonly now: () => number = Date.now,
  ) {}

  start(): void {
    this.#timer = setInterval(() => void this.report(), reportEveryMs);
    this.#timer.unref();
  }

  /** Reports now (and at shutdown, so the last seconds are not lost). */
  async report(): Promise<void> {
    if (this.#sending) return await this.#sending;
    const nowMs = this.now();
    const slots = this.stats.report(this.#sentUpTo - armSlotMs);
    if (slots.length === 0) return;
    this.#sending = this.send(slots)
      .then(() => {
        this.#sentUpTo = nowMs - (nowMs % armSlotMs);
      })
      .catch((error: unknown) => this.onFailure(error))
      .finally(() => (this.#sending = undefined));
    return await this.#sending;
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    await this.report();
  }
}
