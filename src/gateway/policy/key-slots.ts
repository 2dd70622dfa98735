import { GatewayRefusal } from "../wire/gateway-refusal.js";
import type { GatewayCaller } from "./gateway-policy.js";

/**
 * Requests in flight per gateway key, capped: a key's rpm and tpm bound its
 * rate over a minute, not how many requests it holds open at once, and one
 * runaway client with thousands of open requests would fill every replica's
 * batch and the per-model queues before a minute's window noticed. The cap
 * is the key's own max_in_flight when it has one (a batch job's key may need
 * more than every other key, a trial's less), else the gateway's. Counted
 * in this process: with `llmgw gateway --workers N` each worker holds a key
 * to the cap on its own share.
 */
export class KeySlots {
  readonly #inFlight = new Map<string, number>();

  /**
   * `max` is the cap of every key without its own (limits.requests_per_key);
   * `setting` names where an operator raises it, for the refusal
   * ("limits.requests_per_key in server.yaml", "--requests-per-key").
   */
  constructor(
    readonly max: number,
    private readonly setting: string,
  ) {}

  /**
   * Takes a slot for the caller's request, or refuses it with a 429 in
   * OpenAI's shape. Returns the release, to call once the answer has ended
   * however it ended (a second call does nothing); undefined for a caller
   * without a key (an open gateway), which is not counted.
   */
  take(caller: GatewayCaller): (() => void) | undefined {
    const key = caller.key;
    if (key === null) return undefined;
    const held = this.#inFlight.get(key) ?? 0;
    const own = caller.maxInFlight ?? null;
    if (held >= (own ?? this.max)) {
      throw new GatewayRefusal(
        429,
        "requests",
        "too_many_requests_in_flight",
        own === null
          ? `API key "${key}" already has ${held} requests in flight, the most this gateway allows one key (${this.setting}: ${this.max}). Wait for one to finish before sending another, or ask an administrator to raise ${this.setting}, or for a key with a cap of its own (\`llmgw ctl key create NAME --max-in-flight N\`).`
          : `API key "${key}" already has ${held} requests in flight, the most this key may have (its own max_in_flight: ${own}, set when the key was made, in place of ${this.setting}: ${this.max}). Wait for one to finish before sending another, or ask an administrator for a key with a higher max_in_flight (\`llmgw ctl key create NAME --max-in-flight N\`).`,
        1,
      );
    }
    this.#inFlight.set(key, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.#inFlight.get(key) ?? 1) - 1;
      // Keys with nothing in flight take no room: a gateway seeing many keys over a day keeps only the busy ones.
      if (left <= 0) this.#inFlight.delete(key);
      else this.#inFlight.set(key, left);
    };
  }

  /** Requests the key has in flight now. */
  inFlight(key: string): number {
    return this.#inFlight.get(key) ?? 0;
  }
}
