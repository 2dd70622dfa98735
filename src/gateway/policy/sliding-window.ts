/**
 * A count over the last minute, kept in one-second slots: a sliding window
 * with one-second steps. A fixed per-minute window would let a client send
 * twice its limit across a minute boundary (all of it at :59 and again at
 * :00); a log of every request would cost memory per request. Sixty numbers
 * per key and limit cost neither.
 *
 * Time is passed in (milliseconds), so the arithmetic is tested without clocks.
 */
export class SlidingWindow {
  static readonly slots = 60;
  static readonly slotMs = 1000;

  private readonly counts = new Float64Array(SlidingWindow.slots);
  /** The second (epoch seconds) that slot `second % slots` holds. */
  private readonly seconds = new Float64Array(SlidingWindow.slots).fill(-1);
  private total = 0;
  /** Expiry runs once per second at most: the hot path pays a compare, not a scan. */
  private expiredAt = -1;

  /** The amount counted over the last 60 seconds at `nowMs`. */
  current(nowMs: number): number {
    this.expire(nowMs);
    return this.total;
  }

  /** Adds `amount` (negative to correct an estimate) at `nowMs`. */
  add(amount: number, nowMs: number): void {
    const second = Math.floor(nowMs / SlidingWindow.slotMs);
    const slot = second % SlidingWindow.slots;
    this.expire(nowMs);
    if (this.seconds[slot] !== second) {
      this.seconds[slot] = second;
      this.counts[slot] = 0;
    }
    // A correction may exceed what this second holds (the estimate was
    // counted in an earlier second); the window's total never goes below zero.
    const applied = Math.max(amount, -this.total);
    this.counts[slot] = (this.counts[slot] as number) + applied;
    this.total += applied;
  }

  /**
   * Whole seconds until `needed` more fits under `limit`, as Retry-After
   * says it: 0 when it fits now. Old seconds leave the window one by one, so
   * this is when enough of them have left. A `needed` larger than the limit
   * itself can never fit; the caller refuses that on its own.
   */
  secondsUntilFits(needed: number, limit: number, nowMs: number): number {
    this.expire(nowMs);
    let excess = this.total + needed - limit;
    if (excess <= 0) return 0;
    const nowSecond = Math.floor(nowMs / SlidingWindow.slotMs);
    const oldestFirst = [...this.seconds.keys()]
      .filter((slot) => (this.seconds[slot] as number) >= 0)
      .sort((left, right) => (this.seconds[left] as number) - (this.seconds[right] as number));
    for (const slot of oldestFirst) {
      excess -= this.counts[slot] as number;
      // The slot of second s leaves the window when second s + 60 begins.
      if (excess <= 0) return Math.max(1, (this.seconds[slot] as number) + SlidingWindow.slots - nowSecond);
    }
    return SlidingWindow.slots;
  }

  private expire(nowMs: number): void {
    const nowSecond = Math.floor(nowMs / SlidingWindow.slotMs);
    if (nowSecond === this.expiredAt) return;
    this.expiredAt = nowSecond;
    const oldestKept = nowSecond - SlidingWindow.slots + 1;
    for (let slot = 0; slot < SlidingWindow.slots; slot += 1) {
      const second = this.seconds[slot] as number;
      if (second >= 0 && second < oldestKept) {
        this.total -= this.counts[slot] as number;
        this.counts[slot] = 0;
        this.seconds[slot] = -1;
      }
    }
    if (this.total < 1e-9) this.total = Math.max(0, this.total);
  }
}
