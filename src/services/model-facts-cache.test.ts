import { describe, expect, it } from "vitest";
import type { ModelFacts } from "../plan/model-facts.js";
import { ModelFactsCache } from "./model-facts-cache.js";

describe("ModelFactsCache", () => {
  it("answers nothing until a source is read, reads it once, and wakes its owner when it is in", async () => {
    const reads: string[] = [];
    let release: (facts: ModelFacts) => void = () => undefined;
    const facts = { architecture: { trainedContext: 4096 } } as unknown as ModelFacts; // only identity matters here
    let woken = 0;
    const cache = new ModelFactsCache(
      (source) => {
        reads.push(source);
        return new Promise((resolve) => (release = resolve));
      },
      () => (woken += 1),
    );
    expect(cache.get("/models/qwen")).toBeUndefined();
    expect(cache.get("/models/qwen")).toBeUndefined();
    // Reads start on a later tick (they take their turn among the reads at once).
    await new Promise((resolve) => setImmediate(resolve));
    expect(reads).toEqual(["/models/qwen"]);
    release(facts);
    await new Promise((resolve) => setImmediate(resolve));
    expect(woken).toBe(1);
    expect(cache.get("/models/qwen")).toBe(facts);
  });

  it("tries an unreadable source again only after a while", async () => {
    let now = 0;
    let reads = 0;
    const cache = new ModelFactsCache(
      async () => {
        reads += 1;
        throw new Error("mirror down");
      },
      () => undefined,
      () => now,
    );
    cache.get("https://mirror/qwen/");
    await new Promise((resolve) => setImmediate(resolve));
    cache.get("https://mirror/qwen/");
    expect(reads).toBe(1);
    now = 5 * 60_000 + 1;
    cache.get("https://mirror/qwen/");
    await new Promise((resolve) => setImmediate(resolve));
    expect(reads).toBe(2);
  });

  it("reads only so many sources at once, the rest in the order asked, and waits for a queued one as for one under way", async () => {
    const started: string[] = [];
    const releases = new Map<string, (facts: ModelFacts) => void>();
    const facts = { architecture: { trainedContext: 4096 } } as unknown as ModelFacts; // only identity matters here
    const cache = new ModelFactsCache(
      (source) => {
        started.push(source);
        return new Promise((resolve) => releases.set(source, resolve));
      },
      () => undefined,
      Date.now,
      3,
    );
    const sources = Array.from({ length: 10 }, (_, index) => `/models/m${index}`);
    for (const source of sources) expect(cache.get(source)).toBeUndefined();
    const settle = () => new Promise((resolve) => setImmediate(resolve));
    await settle();
    expect(started).toEqual(sources.slice(0, 3));
    const last = cache.whenRead("/models/m9", 60_000);
    releases.get("/models/m0")?.(facts);
    await settle();
    expect(started).toEqual(sources.slice(0, 4));
    for (const source of sources.slice(1)) {
      await settle();
      releases.get(source)?.(facts);
    }
    expect(await last).toBe(facts);
    expect(started).toEqual(sources);
  });

  it("gives up waiting for a queued source after the time asked, and still reads it in its turn", async () => {
    const releases = new Map<string, (facts: ModelFacts) => void>();
    const facts = { architecture: { trainedContext: 4096 } } as unknown as ModelFacts; // only identity matters here
    const cache = new ModelFactsCache((source) => new Promise((resolve) => releases.set(source, resolve)), () => undefined, Date.now, 1);
    cache.get("/models/first");
    expect(await cache.whenRead("/models/second", 10)).toBeUndefined();
    expect(await cache.whenRead("/models/third", 10)).toBeUndefined();
    releases.get("/models/first")?.(facts);
    await new Promise((resolve) => setImmediate(resolve));
    releases.get("/models/second")?.(facts);
    expect(await cache.whenRead("/models/second", 60_000)).toBe(facts);
  });
});
