import { limitsVerdictsSchema, type LimitsBatch, type MetricsRequest } from "../../protocol/index.js";
import type { LimitedKey } from "../policy/charge-key-limits.js";
import { GatewayRefusal } from "../wire/gateway-refusal.js";
import type { SharedKeyLimits } from "../policy/shared-key-limits.js";

/** The worker's end of the channel to its primary (process.send and process.on("message") in a cluster worker). */
export interface PrimaryChannel {
  send(message: LimitsBatch | MetricsRequest): void;
  onMessage(listener: (message: unknown) => void): void;
  /** True while the primary can be reached. */
  readonly connected: boolean;
}

interface Waiting {
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
}

/**
 * A gateway worker's rate limits, kept by its primary (KeyLimitsKeeper).
 * Charges made in one turn of the event loop leave as one message, sent
 * after the turn's I/O (setImmediate): under load one message carries many
 * requests, so the channel costs a message per turn rather than per request.
 * Corrections ride along and are not answered.
 */
export class IpcSharedLimits implements SharedKeyLimits {
  #next = 0;
  #charges: LimitsBatch["charges"] = [];
  readonly #corrections = new Map<string, number>();
  readonly #waiting = new Map<number, Waiting>();
  #scheduled = false;

  constructor(private readonly channel: PrimaryChannel) {
    channel.onMessage((message) => this.#receive(message));
  }

  charge(key: LimitedKey, tokens: number, countsRequest: boolean): Promise<void> {
    const id = this.#next;
    this.#next = (this.#next + 1) % Number.MAX_SAFE_INTEGER;
    this.#charges.push({ id, key: key.name, rpm: key.rpm, tpm: key.tpm, tokens, counts_request: countsRequest });
    this.#schedule();
    return new Promise<void>((resolve, reject) => this.#waiting.set(id, { resolve, reject }));
  }

  correct(keyName: string, tokens: number): void {
    this.#corrections.set(keyName, (this.#corrections.get(keyName) ?? 0) + tokens);
    this.#schedule();
  }

  /** Rejects what waits for an answer that will not come (the primary is gone). */
  abandon(reason: string): void {
    for (const waiting of this.#waiting.values()) waiting.reject(new Error(reason));
    this.#waiting.clear();
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(this.#send);
  }

  readonly #send = (): void => {
    this.#scheduled = false;
    const charges = this.#charges;
    this.#charges = [];
    const corrections = [...this.#corrections].map(([key, tokens]) => ({ key, tokens }));
    this.#corrections.clear();
    if (!this.channel.connected) {
      for (const charge of charges) this.#waiting.get(charge.id)?.reject(new Error("the gateway's primary process is gone; its rate limits cannot be checked"));
      for (const charge of charges) this.#waiting.delete(charge.id);
      return;
    }
    this.channel.send({ type: "llmgw-limits-batch", charges, corrections });
  };

  #receive(message: unknown): void {
    // Other messages on the channel (metrics, the cluster's own) are not for this class.
    if (typeof message !== "object" || message === null || (message as { type?: unknown }).type !== "llmgw-limits-verdicts") return;
    const parsed = limitsVerdictsSchema.safeParse(message);
    if (!parsed.success) {
      // An answer that cannot be read leaves its requests waiting forever: fail them instead, and say why.
      this.abandon(`the gateway's primary answered a rate-limit check this worker cannot read (${parsed.error.issues[0]?.message ?? "invalid"}); run one llmgw version for the primary and its workers`);
      return;
    }
    for (const verdict of parsed.data.verdicts) {
      const waiting = this.#waiting.get(verdict.id);
      if (!waiting) continue;
      this.#waiting.delete(verdict.id);
      const refusal = verdict.refusal;
      if (refusal === null) waiting.resolve();
      else waiting.reject(new GatewayRefusal(429, refusal.type, refusal.code, refusal.message, refusal.retry_after_seconds ?? undefined));
    }
  }
}
