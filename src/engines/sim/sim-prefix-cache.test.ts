import { describe, expect, it } from "vitest";
import { SimPrefixCache } from "./sim-prefix-cache.js";
import { approximateTokenCount } from "./sim-text.js";

const system = "You answer questions about the ocean, briefly and with care. ".repeat(30);
const read = (cache: SimPrefixCache, text: string) => cache.read(text, approximateTokenCount(text));

describe("the simulated engine's prefix cache", () => {
  it("finds a prompt's shared start again, and only that", () => {
    const cache = new SimPrefixCache(100_000);
    expect(read(cache, `${system}Why are waves?`)).toBe(0);
    const cached = read(cache, `${system}What is a tide, and when does it turn?`);
    // Every whole block of the system prompt, not the question after it.
    expect(cached).toBeGreaterThan(approximateTokenCount(system) - 16);
    expect(cached).toBeLessThanOrEqual(approximateTokenCount(system));
    expect(read(cache, `Something else. ${system}`)).toBe(0);
  });

  it("never reports a whole prompt cached: the last token is read to start the answer", () => {
    const cache = new SimPrefixCache(100_000);
    const prompt = "x".repeat(640);
    read(cache, prompt);
    expect(read(cache, prompt)).toBe(approximateTokenCount(prompt) - 1);
  });

  it("forgets the least recently read prompts past its size", () => {
    const cache = new SimPrefixCache(1600);
    read(cache, system);
    for (let prompt = 0; prompt < 20; prompt += 1) read(cache, `${prompt} ${"y".repeat(1000)}`);
    expect(cache.blocks).toBeLessThanOrEqual(100);
    expect(read(cache, system)).toBe(0);
  });
});
