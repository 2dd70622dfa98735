import type { ArmSlotReport, ArmCounts } from "../../protocol/index.js";
import type { Arm } from "./choose-arm.js";

/** Upper bounds of the latency histogram, in milliseconds; the last bucket holds everything slower. */
export const latencyBoundsMs = [5, 10, 25, 50, 100, 250, 500, 750, 1000, 1500, 2500, 5000, 10_000, 30_000, 60_000, 120_000] as const;

/** One slot of counts: requests, errors and the latency histogram (one more bucket than bounds, for the slowest). */
export interface ArmSlot {
  /** Start of the slot, ms since the epoch, a multiple of the slot length. */
  readonly start: number;
  requests: number;
  errors: number;
  readonly latency: number[];
}

/** Slots are 5 s: fine enough for a gate window of a minute, coarse enough that an hour is 720 slots. */
export const armSlotMs = 5000;
/** An hour of slots per arm is kept: a gate window longer than that reads what is kept. */
const slotsKept = 720;

/**
 * Per model and arm, requests, errors and latency in time slots: bounded
 * memory (counts and a histogram per slot, never a row per request) that a
 * gateway reports and the server sums over a gate's window.
 */
export class ArmStats {
  readonly #slots = new Map<string, ArmSlot[]>();
  /** Per model and arm, when its current canary began here: no slot spans two canaries. */
  readonly #epochs = new Map<string, number>();

  /**
   * A canary began for `model`: both arms start new slots now, so the counts
   * of a canary started seconds after another ended never hold the earlier
   * one's requests (a gate would otherwise abort a good canary on its
   * predecessor's errors).
   */
  startEpoch(model: string, nowMs: number): void {
    this.#epochs.set(`${model}\u0000canary`, nowMs);
    this.#epochs.set(`${model}\u0000stable`, nowMs);
  }

  record(model: string, arm: Arm, latencyMs: number, error: boolean, nowMs: number): void {
    const key = `${model}\u0000${arm}`;
    let slots = this.#slots.get(key);
    if (!slots) this.#slots.set(key, (slots = []));
    const start = Math.max(nowMs - (nowMs % armSlotMs), this.#epochs.get(key) ?? 0);
    let slot = slots[slots.length - 1];
    if (slot?.start !== start) {
      slot = { start, requests: 0, errors: 0, latency: new Array<number>(latencyBoundsMs.length + 1).fill(0) };
      slots.push(slot);
      if (slots.length > slotsKept) slots.splice(0, slots.length - slotsKept);
    }
    slot.requests += 1;
    if (error) slot.errors += 1;
    const bucket = latencyBoundsMs.findIndex((bound) => latencyMs <= bound);
    const index = bucket < 0 ? latencyBoundsMs.length : bucket;
    slot.latency[index] = (slot.latency[index] ?? 0) + 1;
  }

  /** The slots of one model's arm that end after `sinceMs` and start at or after `notBeforeMs` (the canary's start), copied. */
  slots(model: string, arm: Arm, sinceMs: number, notBeforeMs = 0): ArmSlot[] {
    return (this.#slots.get(`${model}\u0000${arm}`) ?? [])
      .filter((slot) => slot.start + armSlotMs > sinceMs && slot.start >= notBeforeMs)
      .map((slot) => ({ ...slot, latency: [...slot.latency] }));
  }

  /** Every model's and arm's slots that start at or after `sinceMs`, as a gateway reports them. */
  report(sinceMs: number): ArmSlotReport[] {
    const report: ArmSlotReport[] = [];
    for (const [key, slots] of this.#slots) {
      const [model = "", arm] = key.split("\u0000");
      for (const slot of slots) {
        if (slot.start >= sinceMs) report.push({ model, arm: arm === "canary" ? "canary" : "stable", start: slot.start, requests: slot.requests, errors: slot.errors, latency: [...slot.latency] });
      }
    }
    return report;
  }
}

/** Requests, errors and p95 over some slots (from one gateway or many). */
export function summariseSlots(slots: readonly Pick<ArmSlot, "requests" | "errors" | "latency">[]): ArmCounts {
  let requests = 0;
  let errors = 0;
  const latency = new Array<number>(latencyBoundsMs.length + 1).fill(0);
  for (const slot of slots) {
    requests += slot.requests;
    errors += slot.errors;
    slot.latency.forEach((count, index) => {
      if (index < latency.length) latency[index] = (latency[index] ?? 0) + count;
    });
  }
  const counted = latency.reduce((sum, count) => sum + count, 0);
  if (counted === 0) return { requests, errors, p95_ms: null };
  const rank = Math.ceil(counted * 0.95);
  let seen = 0;
  for (const [index, count] of latency.entries()) {
    seen += count;
    // The slowest bucket has no upper bound: it is reported at twice the last bound, a figure no gate should pass.
    if (seen >= rank) return { requests, errors, p95_ms: latencyBoundsMs[index] ?? 2 * (latencyBoundsMs[latencyBoundsMs.length - 1] ?? 0) };
  }
  return { requests, errors, p95_ms: null };
}
