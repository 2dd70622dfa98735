import { describe, expect, it } from "vitest";
import { ConcurrencyGate } from "./concurrency-gate.js";

describe("the concurrency gate", () => {
  it("admits up to its limit and queues the rest in arrival order", async () => {
    const gate = new ConcurrencyGate(1);
    const order: string[] = [];
    const releaseFirst = await gate.acquire();
    const second = gate.acquire().then((release) => (order.push("second"), release));
    const third = gate.acquire().then((release) => (order.push("third"), release));
    expect([gate.running, gate.waiting]).toEqual([1, 2]);
    releaseFirst();
    (await second)();
    (await third)();
    expect(order).toEqual(["second", "third"]);
    expect([gate.running, gate.waiting]).toEqual([0, 0]);
  });

  it("drops a waiting request whose client left, without giving it a slot", async () => {
    const gate = new ConcurrencyGate(1);
    const release = await gate.acquire();
    const abandoned = new AbortController();
    const waiting = gate.acquire(abandoned.signal);
    abandoned.abort();
    await expect(waiting).rejects.toThrow(/abandoned/);
    expect(gate.waiting).toBe(0);
    release();
    release(); // a second release of the same slot changes nothing
    expect(gate.running).toBe(0);
  });
});
