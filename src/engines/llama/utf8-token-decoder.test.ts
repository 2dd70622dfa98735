import { describe, expect, it } from "vitest";
import { Utf8TokenDecoder } from "./utf8-token-decoder.js";

/** A byte-level vocabulary as llama.cpp detokenizes it: token n is byte n, and an incomplete character is U+FFFD. */
const detokenize = (tokens: readonly number[]) => new TextDecoder().decode(Uint8Array.from(tokens));

describe("Utf8TokenDecoder", () => {
  it("holds the first byte of a two-byte character until its second byte comes", () => {
    const decoder = new Utf8TokenDecoder(detokenize);
    const bytes = [...Buffer.from("aé", "utf8")];
    expect(bytes.map((byte) => decoder.push(byte))).toEqual(["a", "", "é"]);
    expect(decoder.flush()).toBe("");
  });

  it("streams a four-byte character split over four tokens as one piece", () => {
    const decoder = new Utf8TokenDecoder(detokenize);
    const pieces = [...Buffer.from("x🙂y", "utf8")].map((byte) => decoder.push(byte));
    expect(pieces.join("")).toBe("x🙂y");
    expect(pieces.filter((piece) => piece !== "")).toEqual(["x", "🙂", "y"]);
  });

  it("lets out what is held when the answer ends inside a character", () => {
    const decoder = new Utf8TokenDecoder(detokenize);
    const [first, second] = [...Buffer.from("€", "utf8")];
    expect(decoder.push(first as number)).toBe("");
    expect(decoder.push(second as number)).toBe("");
    expect(decoder.flush()).toBe("\uFFFD");
  });

  it("does not hold forever on bytes that never make a character", () => {
    const decoder = new Utf8TokenDecoder(detokenize);
    const pieces = [0xff, 0xff, 0xff, 0xff].map((byte) => decoder.push(byte));
    expect(pieces.join("")).toContain("\uFFFD");
    expect(decoder.flush()).toBe("");
  });
});
