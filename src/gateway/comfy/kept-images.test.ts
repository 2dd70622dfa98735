import { describe, expect, it } from "vitest";
import { KeptImages } from "./kept-images.js";

describe("images kept for url answers", () => {
  it("serves an image until its time is up, then not", () => {
    let now = 1_000;
    const kept = new KeptImages(60_000, 1024, () => now);
    const id = kept.keep(Buffer.from("png bytes"), "image/png");
    expect(id).toMatch(/^[0-9a-f]{32}\.png$/);
    expect(kept.get(id)?.bytes.toString()).toBe("png bytes");
    now += 60_000;
    expect(kept.get(id)).toBeUndefined();
    expect(kept.size).toEqual({ images: 0, bytes: 0 });
  });

  it("lets the oldest go when the size budget is spent, so unfetched images cannot fill the memory", () => {
    const kept = new KeptImages(60_000, 100);
    const ids = [0, 1, 2].map(() => kept.keep(Buffer.alloc(40), "image/png"));
    expect(kept.get(ids[0] as string)).toBeUndefined();
    expect(kept.get(ids[2] as string)).toBeDefined();
    expect(kept.size.bytes).toBeLessThanOrEqual(100);
  });
});
