import { describe, expect, it } from "vitest";
import { didYouMean } from "./did-you-mean.js";

describe("did you mean", () => {
  it("offers the name a typo was meant to be", () => {
    expect(didYouMean("chat7b", ["chat-7b", "embed-small"])).toBe(' (did you mean "chat-7b"?)');
    expect(didYouMean("vlm", ["vllm", "sglang", "llamacpp"])).toBe(' (did you mean "vllm"?)');
    expect(didYouMean("Chat-7B", ["chat-7b"])).toBe(' (did you mean "chat-7b"?)');
  });

  it("offers nothing when no name is near, rather than a wrong one", () => {
    expect(didYouMean("ghost", ["chat-7b", "embed-small"])).toBe("");
    expect(didYouMean("x", ["vllm"])).toBe("");
    expect(didYouMean("chat", [])).toBe("");
  });
});
