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
    expect(reads).toBe(2);
  });
});
