import { describe, expect, it } from "vitest";
import type { UsageIncrement } from "../../protocol/gateway-keys-feed.js";
import { UsageLedger } from "./usage-ledger.js";
import { usageBatchLimit } from "../../protocol/gateway-keys-feed.js";

describe("UsageLedger", () => {
  it("sums requests per key, model and minute into one increment per row", async () => {
    const written: UsageIncrement[][] = [];
    let clock = Date.parse("2030-05-01T10:00:30Z");
    const ledger = new UsageLedger(async (increments) => void written.push([...increments]), () => clock);
    void ledger.count("a", "qwen", { errors: 0, promptTokens: 10, completionTokens: 5 });
    void ledger.count("a", "qwen", { errors: 1, promptTokens: 1, completionTokens: 0 });
    clock += 60_000;
    void ledger.count("a", "qwen", { errors: 0, promptTokens: 2, completionTokens: 2 });
    await ledger.flush();
    expect(written).toEqual([
      [
        { key: "a", model: "qwen", minute: "2030-05-01T10:00Z", requests: 2, errors: 1, promptTokens: 11, completionTokens: 5 },
        { key: "a", model: "qwen", minute: "2030-05-01T10:01Z", requests: 1, errors: 0, promptTokens: 2, completionTokens: 2 },
      ],
    ]);
    await ledger.flush();
    expect(written).toHaveLength(1);
  });

  it("keeps a batch the store refused and writes it with the next one", async () => {
    let failing = true;
    const written: UsageIncrement[] = [];
    const clock = Date.parse("2030-05-01T10:00:00Z");
    const ledger = new UsageLedger(async (increments) => {
      if (failing) throw new Error("database is down");
      written.push(...increments);
    }, () => clock);
    void ledger.count("a", "qwen", { errors: 0, promptTokens: 10, completionTokens: 5 });
    await expect(ledger.flush()).rejects.toThrow("database is down");
    void ledger.count("a", "qwen", { errors: 0, promptTokens: 1, completionTokens: 1 });
    expect(ledger.pendingRequests).toBe(2);
    failing = false;
    await ledger.flush();
    expect(written).toEqual([{ key: "a", model: "qwen", minute: "2030-05-01T10:00Z", requests: 2, errors: 0, promptTokens: 11, completionTokens: 6 }]);
    expect(ledger.pendingRequests).toBe(0);
  });

  it("writes a large batch in parts, and after a failed part keeps only what was not written", async () => {
    const written: UsageIncrement[] = [];
    let calls = 0;
    const ledger = new UsageLedger(async (increments) => {
      calls += 1;
      if (calls === 2) throw new Error("database is down");
      written.push(...increments);
    }, () => Date.parse("2030-05-01T10:00:00Z"));
    for (let index = 0; index < usageBatchLimit + 10; index += 1) void ledger.count(`key-${index}`, "qwen", { errors: 0, promptTokens: 1, completionTokens: 1 });
    await expect(ledger.flush()).rejects.toThrow("database is down");
    expect([written.length, ledger.pendingRequests]).toEqual([usageBatchLimit, 10]);
    await ledger.flush();
    expect(written.length).toBe(usageBatchLimit + 10);
    expect(new Set(written.map((increment) => increment.key)).size).toBe(usageBatchLimit + 10);
  });
});
