import { describe, expect, it } from "vitest";
import { PrefixIndex, prefixChain, prefixChunkChars, prefixChunksMax } from "./prefix-index.js";

const system = "You are a careful assistant. ".repeat(40);

describe("prefixChain", () => {
  it("gives two prompts the same entries as far as their text is the same", () => {
    const first = prefixChain(`${system}What is a prefix cache?`);
    const second = prefixChain(`${system}Why is the sky blue? Tell me at some length, please.`);
    const shared = Math.floor(system.length / prefixChunkChars);
    expect(first.slice(0, shared)).toEqual(second.slice(0, shared));
    expect(prefixChain(`x${system}`)[0]).not.toBe(first[0]);
  });

  it("names the whole prefix, not only the chunk: the same chunk after a different start differs", () => {
    const chunk = "z".repeat(prefixChunkChars);
    expect(prefixChain(`${"a".repeat(prefixChunkChars)}${chunk}`)[1]).not.toBe(prefixChain(`${"b".repeat(prefixChunkChars)}${chunk}`)[1]);
  });

  it("stops at its bound however long the prompt", () => {
    expect(prefixChain("q".repeat(prefixChunkChars * (prefixChunksMax + 50)))).toHaveLength(prefixChunksMax);
    expect(prefixChain("short")).toEqual([]);
  });
});

describe("PrefixIndex", () => {
  it("knows how much of a prompt each replica was sent", () => {
    const index = new PrefixIndex();
    const turn1 = prefixChain(`${system}user: hello`);
    const turn2 = prefixChain(`${system}user: hello\nassistant: ${"an answer ".repeat(60)}`);
    index.record("m", turn1, "a");
    index.record("m", prefixChain("something else entirely ".repeat(30)), "b");
    const held = index.held("m", turn2);
    expect(held.get("a")).toBe(turn1.length);
    expect(held.has("b")).toBe(false);
    expect(index.held("other-model", turn2).size).toBe(0);
  });

  it("forgets a replica that left the routing table, and a model that left it", () => {
    const index = new PrefixIndex();
    const chain = prefixChain(system);
    index.record("m", chain, "a");
    index.record("m", chain, "b");
    index.record("n", chain, "c");
    index.retain(new Map([["m", new Set(["b"])]]));
    expect([...index.held("m", chain).keys()]).toEqual(["b"]);
    expect(index.size("n")).toBe(0);
    index.retain(new Map([["m", new Set<string>()]]));
    expect(index.held("m", chain).size).toBe(0);
    expect(index.size("m")).toBe(0);
  });

  it("stays within its bound over a million distinct prompts, keeping the most recent", () => {
    const bound = 4096;
    const index = new PrefixIndex(bound);
    let last: number[] = [];
    for (let prompt = 0; prompt < 1_000_000; prompt += 1) {
      // One chunk each: a million distinct entries, the cheapest way to push the bound a million times.
      last = [prompt * 2654435761];
      index.record("m", last, prompt % 2 === 0 ? "a" : "b");
      if (prompt % 100_000 === 0) expect(index.size("m")).toBeLessThanOrEqual(bound);
    }
    expect(index.size("m")).toBe(bound);
    expect(index.held("m", last).get("b")).toBe(1);
    expect(index.held("m", [0]).size).toBe(0);
  });

  it("keeps a prefix that is sent again over those sent once since", () => {
    const index = new PrefixIndex(3);
    index.record("m", [1], "a");
    index.record("m", [2], "a");
    index.record("m", [3], "a");
    index.record("m", [1], "a");
    index.record("m", [4], "a");
    expect(index.held("m", [1]).get("a")).toBe(1);
    expect(index.held("m", [2]).size).toBe(0);
  });
});
