import { describe, expect, it } from "vitest";
import { embeddingToBase64 } from "../openai-server/embedding-encoding.js";
import { approximateTokenCount, requestKind, simulatedAnswer, simulatedEmbedding } from "./sim-text.js";

const answer = (prompt: string, extra: { maxTokens?: number; seed?: number; ignoreEos?: boolean } = {}) =>
  simulatedAnswer({ modelName: "m", prompt, maxTokens: extra.maxTokens, ignoreEos: extra.ignoreEos ?? false, seed: extra.seed });
/** The body's tokens: those after the first line that names the model and echoes the prompt. */
const bodyLength = (tokens: readonly string[]) => tokens.length - tokens.findIndex((token) => token.startsWith("\n\n"));

describe("the simulated model's text", () => {
  it("counts about four characters a token", () => {
    expect(approximateTokenCount("")).toBe(0);
    expect(approximateTokenCount("abc")).toBe(1);
    expect(approximateTokenCount("abcdefghi")).toBe(3);
  });

  it("opens with a line that names the model and echoes the prompt, one word a token", () => {
    const { tokens, finishReason } = answer("hello there");
    expect(tokens.slice(0, 6)).toEqual(["Simulated", " answer", " from", " m:", " hello", " there"]);
    expect(tokens[6]).toMatch(/^\n\n\S/);
    expect(tokens.join("").split("\n\n")[0]).toBe("Simulated answer from m: hello there");
    expect(finishReason).toBe("stop");
  });

  it("never echoes more than 24 words of a long prompt", () => {
    expect(answer("word ".repeat(1000)).tokens.join("").split("\n\n")[0]?.split(" ")).toHaveLength(28);
  });

  it("sizes the answer as a chat model would: a few hundred tokens for an open question, a sentence for a short factual one", () => {
    expect(requestKind("Explain how a transformer's attention works")).toBe("open");
    expect(requestKind("What is the capital of France?")).toBe("factual");
    expect(requestKind("hi")).toBe("brief");
    for (let seed = 0; seed < 20; seed += 1) {
      const open = bodyLength(answer("Explain how a transformer's attention works", { seed }).tokens);
      expect(open).toBeGreaterThanOrEqual(150);
      expect(open).toBeLessThanOrEqual(450);
      const factual = bodyLength(answer("What is the capital of France?", { seed }).tokens);
      expect(factual).toBeGreaterThanOrEqual(6);
      expect(factual).toBeLessThanOrEqual(40);
    }
  });

  it("gives the same answer for the same request and seed, and another for another seed", () => {
    const prompt = "Describe the water cycle";
    expect(answer(prompt, { seed: 7 }).tokens).toEqual(answer(prompt, { seed: 7 }).tokens);
    const lengths = new Set(Array.from({ length: 8 }, (_, seed) => answer(prompt, { seed }).tokens.join("")));
    expect(lengths.size).toBeGreaterThan(1);
  });

  it("stays within max_tokens, saying length when cut, and fills max_tokens exactly with ignore_eos", () => {
    const cut = answer("Explain everything", { maxTokens: 20 });
    expect(cut.tokens).toHaveLength(20);
    expect(cut.finishReason).toBe("length");
    const filled = answer("hi", { maxTokens: 600, ignoreEos: true });
    expect(filled.tokens).toHaveLength(600);
    expect(filled.finishReason).toBe("stop");
  });

  it("embeds equal texts equally and encodes float32s little-endian for base64", () => {
    expect(simulatedEmbedding("a", 16)).toEqual(simulatedEmbedding("a", 16));
    const vector = [1.5, -2];
    const bytes = Buffer.from(embeddingToBase64(vector), "base64");
    expect([bytes.readFloatLE(0), bytes.readFloatLE(4)]).toEqual(vector);
  });
});
