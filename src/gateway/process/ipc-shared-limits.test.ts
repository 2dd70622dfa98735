import { describe, expect, it } from "vitest";
import { hashToken } from "../../auth/tokens.js";
import type { GatewayKey } from "../../protocol/gateway-keys-feed.js";
import { limitsBatchSchema, type LimitsBatch } from "../../protocol/gateway-worker-messages.js";
import { GatewayRefusal } from "../wire/gateway-refusal.js";
import { IpcSharedLimits, type PrimaryChannel } from "./ipc-shared-limits.js";
import { KeyLimitsKeeper } from "../policy/key-limits-keeper.js";
import { KeysPolicy } from "../policy/keys-policy.js";

/**
 * Workers of one gateway and the primary that keeps their limits, in one
 * process: each worker's channel carries its batches through the same schema
 * check the primary makes, to one KeyLimitsKeeper, and the verdicts back.
 */
function primaryWithWorkers(count: number, clock: () => number): { workers: IpcSharedLimits[]; sent: LimitsBatch[]; cut(worker: number): void } {
  const keeper = new KeyLimitsKeeper(clock);
  const sent: LimitsBatch[] = [];
  const connected = Array.from({ length: count }, () => true);
  const workers = connected.map((_, index) => {
    let listener: (message: unknown) => void = () => undefined;
    const channel: PrimaryChannel = {
      send(message) {
        const batch = limitsBatchSchema.parse(message);
        sent.push(batch);
        const verdicts = keeper.answer(batch);
        setImmediate(() => listener(verdicts));
      },
      onMessage(receive) {
        listener = receive;
      },
      get connected() {
        return connected[index] as boolean;
      },
    };
    return new IpcSharedLimits(channel);
  });
  return { workers, sent, cut: (worker) => (connected[worker] = false) };
}

const settled = (promise: Promise<void>) => promise.then(() => "admitted", (error: unknown) => error);

describe("rate limits shared by the workers of one gateway", () => {
  it("admits a key's rpm in total across workers, and tells the refused when to retry", async () => {
    const now = Date.parse("2026-11-30T12:00:30Z");
    const { workers } = primaryWithWorkers(2, () => now);
    const key = { name: "team", rpm: 3, tpm: null };
    const outcomes = await Promise.all([0, 1, 0, 1, 0, 1].map((worker) => settled((workers[worker] as IpcSharedLimits).charge(key, 10, true))));
    // Each worker alone would admit all three of its own; together they admit three.
    expect(outcomes.filter((outcome) => outcome === "admitted")).toHaveLength(3);
    for (const refused of outcomes.filter((outcome) => outcome !== "admitted")) {
      expect(refused).toBeInstanceOf(GatewayRefusal);
      expect(refused).toMatchObject({ status: 429, code: "rate_limit_exceeded", retryAfterSeconds: 60 });
    }
  });

  it("sends the charges of one turn of the event loop as one message", async () => {
    const { workers, sent } = primaryWithWorkers(1, Date.now);
    const worker = workers[0] as IpcSharedLimits;
    await Promise.all([1, 2, 3, 4, 5].map((tokens) => worker.charge({ name: "batch", rpm: 100, tpm: null }, tokens, true)));
    expect(sent).toHaveLength(1);
    expect(sent[0]?.charges.map((charge) => charge.tokens)).toEqual([1, 2, 3, 4, 5]);
  });

  it("gives back tokens a worker over-estimated, so the key's tpm counts what the engine reported", async () => {
    const { workers } = primaryWithWorkers(2, Date.now);
    const key = { name: "tokens", rpm: null, tpm: 100 };
    await (workers[0] as IpcSharedLimits).charge(key, 80, true);
    expect(await settled((workers[1] as IpcSharedLimits).charge(key, 30, true))).toMatchObject({ code: "rate_limit_exceeded" });
    // The engine said 20, not 80: 60 go back, and the next charge fits.
    (workers[0] as IpcSharedLimits).correct("tokens", -60);
    expect(await settled((workers[1] as IpcSharedLimits).charge(key, 30, true))).toBe("admitted");
  });

  it("fails a charge at once when the primary is gone, instead of leaving the request waiting", async () => {
    const { workers, cut } = primaryWithWorkers(1, Date.now);
    cut(0);
    const outcome = await settled((workers[0] as IpcSharedLimits).charge({ name: "orphan", rpm: 5, tpm: null }, 1, true));
    expect((outcome as Error).message).toContain("primary process is gone");
  });

  it("fails the waiting charges when the primary's answer cannot be read", async () => {
    let listener: (message: unknown) => void = () => undefined;
    const worker = new IpcSharedLimits({
      send: () => setImmediate(() => listener({ type: "llmgw-limits-verdicts", verdicts: [{ id: "zero" }] })),
      onMessage: (receive) => (listener = receive),
      connected: true,
    });
    const outcome = await settled(worker.charge({ name: "garbled", rpm: 5, tpm: null }, 1, true));
    expect((outcome as Error).message).toContain("answered a rate-limit check this worker cannot read");
  });

  it("keeps keys without limits in the worker: only a limited key's request waits for the primary", async () => {
    const { workers, sent } = primaryWithWorkers(1, Date.now);
    const row = (name: string, rpm: number | null): GatewayKey => ({ id: name, name, hash: hashToken(`secret-${name}`), models: null, rpm, tpm: null, maxInFlight: null, expiresAt: null, createdAt: "2026-11-30T00:00:00Z", revokedAt: null });
    const policy = await KeysPolicy.start({ readKeys: async () => [row("free", null), row("limited", 1)], writeUsage: async () => undefined }, { sharedLimits: workers[0] as IpcSharedLimits });
    try {
      expect(policy.admit(policy.authenticate("Bearer secret-free"), "any", 10)).toBeUndefined();
      await policy.admit(policy.authenticate("Bearer secret-limited"), "any", 10);
      const refused = await settled(policy.admit(policy.authenticate("Bearer secret-limited"), "any", 10) as Promise<void>);
      expect(refused).toMatchObject({ status: 429, code: "rate_limit_exceeded" });
      expect(sent.flatMap((batch) => batch.charges.map((charge) => charge.key))).toEqual(["limited", "limited"]);
    } finally {
      await policy.close();
    }
  });
});
