import { describe, expect, it } from "vitest";
import { approximateTokenCount, embeddingToBase64, simulatedAnswer, simulatedEmbedding } from "./sim-text.js";

describe("the simulated model's text", () => {
  it("counts about four characters a token", () => {
    expect(approximateTokenCount("")).toBe(0);
    expect(approximateTokenCount("abc")).toBe(1);
    expect(approximateTokenCount("abcdefghi")).toBe(3);
  });

  it("echoes the prompt after naming the model, one word a token", () => {
    const answer = simulatedAnswer("m", "hello there", undefined, false);
    expect(answer.tokens).toEqual(["Simulated", " answer", " from", " m:", " hello", " there"]);
    expect(answer.finishReason).toBe("stop");
  });

  it("never echoes more than 24 words of a long prompt", () => {
    expect(simulatedAnswer("m", "word ".repeat(1000), undefined, false).tokens).toHaveLength(28);
  });

  it("embeds equal texts equally and encodes float32s little-endian for base64", () => {
    expect(simulatedEmbedding("a", 16)).toEqual(simulatedEmbedding("a", 16));
    const vector = [1.5, -2];
    const bytes = Buffer.from(embeddingToBase64(vector), "base64");
    expect([bytes.readFloatLE(0), bytes.readFloatLE(4)]).toEqual(vector);
  });
});
