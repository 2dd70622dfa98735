import net from "node:net";
import { describe, expect, it } from "vitest";
import { ephemeralPortRange, findEnginePort } from "./engine-process.js";

describe("engine ports", () => {
  it("reads the kernel's own port range, and falls back to Linux's default on anything else", () => {
    expect(ephemeralPortRange("32768\t60999\n")).toEqual({ low: 32768, high: 60999 });
    expect(ephemeralPortRange("1024 65535")).toEqual({ low: 1024, high: 65535 });
    expect(ephemeralPortRange("garbage")).toEqual({ low: 32768, high: 60999 });
    expect(ephemeralPortRange("60999 32768")).toEqual({ low: 32768, high: 60999 });
  });

  it("gives an engine a free port below the kernel's range, passing over one that is taken", async () => {
    const range = { low: 32768, high: 60999 };
    // Something holds a port below the range, and the first pick lands on it.
    const heldBelow = net.createServer();
    const target = await new Promise<number | undefined>((resolve) => {
      heldBelow.once("error", () => resolve(undefined));
      heldBelow.listen(23456, "127.0.0.1", () => resolve(23456));
    });
    const picks = target === undefined ? [0.5] : [(target - 10000 + 0.5) / (range.low - 10000), 0.25];
    let index = 0;
    const port = await findEnginePort(() => picks[Math.min(index++, picks.length - 1)] as number, range);
    expect(port).toBeGreaterThanOrEqual(10000);
    expect(port).toBeLessThan(range.low);
    if (target !== undefined) {
      expect(index).toBe(2);
      expect(port).not.toBe(target);
    }
    heldBelow.close();
  });

  it("never gives an engine a port that fetch refuses (10080), even when it is free", async () => {
    const range = { low: 32768, high: 60999 };
    const picks = [(10080 - 10000 + 0.5) / (range.low - 10000), 0.25];
    let index = 0;
    const port = await findEnginePort(() => picks[Math.min(index++, picks.length - 1)] as number, range);
    expect(index).toBe(2);
    expect(port).not.toBe(10080);
    // What fetch itself says of that port: the reason it is passed over.
    await expect(fetch("http://127.0.0.1:10080/")).rejects.toMatchObject({ cause: { message: "bad port" } });
  });

  it("lets the kernel pick when its range leaves too little room below it", async () => {
    const port = await findEnginePort(() => 0, { low: 10500, high: 65535 });
    expect(port).toBeGreaterThan(0);
  });
});
