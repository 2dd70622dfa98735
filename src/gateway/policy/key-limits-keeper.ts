import type { LimitsBatch, LimitsVerdicts } from "../../protocol/index.js";
import { chargeKeyLimits, type KeyLimits } from "./charge-key-limits.js";
import { GatewayRefusal } from "../wire/gateway-refusal.js";
import { SlidingWindow } from "./sliding-window.js";

/**
 * The primary's side of several gateway workers' rate limits: every key's
 * windows, in one process, so a key's rpm and tpm hold for all the workers
 * together. Each charge is decided exactly as a single gateway decides it
 * (chargeKeyLimits); the workers only carry charges here and verdicts back.
 */
export class KeyLimitsKeeper {
  readonly #byKey = new Map<string, KeyLimits>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Corrections first (they are older than the charges sent with them), then each charge in the order sent. */
  answer(batch: LimitsBatch): LimitsVerdicts {
    const now = this.now();
    for (const correction of batch.corrections) this.#limits(correction.key).tokens.add(correction.tokens, now);
    const verdicts: LimitsVerdicts["verdicts"] = [];
    for (const charge of batch.charges) {
      try {
        chargeKeyLimits(this.#limits(charge.key), { name: charge.key, rpm: charge.rpm, tpm: charge.tpm }, charge.tokens, charge.counts_request, now);
        verdicts.push({ id: charge.id, refusal: null });
      } catch (error) {
        if (!(error instanceof GatewayRefusal)) throw error;
        verdicts.push({ id: charge.id, refusal: { type: error.type, code: error.code, message: error.message, retry_after_seconds: error.retryAfterSeconds ?? null } });
      }
    }
    return { type: "llmgw-limits-verdicts", verdicts };
  }

  #limits(key: string): KeyLimits {
    let limits = this.#byKey.get(key);
    if (!limits) {
      // Bounded by the keys the workers authenticated: a name arrives only after its key was found in the key table.
      limits = { requests: new SlidingWindow(), tokens: new SlidingWindow() };
      this.#byKey.set(key, limits);
    }
    return limits;
  }
}
