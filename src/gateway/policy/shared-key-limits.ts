import type { LimitedKey } from "./charge-key-limits.js";

/**
 * Rate-limit windows kept outside this process: with several gateway
 * workers behind one port, a key's --rpm 60 must mean 60 a minute in total,
 * not 60 per worker, so one process (the workers' primary) keeps every
 * key's windows and the workers charge there.
 */
export interface SharedKeyLimits {
  /** Charges one request; rejects with the GatewayRefusal (429) chargeKeyLimits would throw. */
  charge(key: LimitedKey, tokens: number, countsRequest: boolean): Promise<void>;
  /** Replaces part of an estimate with what the engine reported (negative: fewer tokens than charged). Not waited for. */
  correct(keyName: string, tokens: number): void;
}
