import { describe, expect, it } from "vitest";
import { chatLogprobs, legacyLogprobs, logprob } from "./logprobs.js";

const tokens = [
  { text: "Hi", probability: 0.5, alternatives: [{ text: "Hi", probability: 0.5 }, { text: "Yo", probability: 0.25 }, { text: "é", probability: 0.1 }] },
  { text: "!", probability: 1, alternatives: [{ text: "!", probability: 1 }] },
];

describe("logprobs", () => {
  it("writes chat's content list with each token's bytes and its likeliest alternatives", () => {
    const shaped = chatLogprobs(tokens, 2);
    expect(shaped.content[0]).toEqual({
      token: "Hi",
      logprob: Math.log(0.5),
      bytes: [72, 105],
      top_logprobs: [
        { token: "Hi", logprob: Math.log(0.5), bytes: [72, 105] },
        { token: "Yo", logprob: Math.log(0.25), bytes: [89, 111] },
      ],
    });
    expect(shaped.content[1]?.logprob).toBe(0);
  });

  it("writes the legacy lists with the text offset of each token", () => {
    expect(legacyLogprobs(tokens, 1)).toEqual({ tokens: ["Hi", "!"], token_logprobs: [Math.log(0.5), 0], top_logprobs: [{ Hi: Math.log(0.5) }, { "!": 0 }], text_offset: [0, 2] });
  });

  it("keeps a token of no chance finite, as JSON needs", () => {
    expect(logprob(0)).toBe(-9999);
  });
});
