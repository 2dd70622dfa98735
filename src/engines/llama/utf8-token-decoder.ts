/**
 * Turns generated tokens into text without losing a character that a token
 * boundary splits. llama.cpp detokenizes a lone part of a multi-byte UTF-8
 * character to U+FFFD, so the tokens of an unfinished character are held
 * until the character completes, and whatever is still held when the answer
 * ends is let out as it is (as llama-server sends its last bytes).
 */
export class Utf8TokenDecoder {
  #held: number[] = [];
  #previous: number[] = [];

  /** `detokenize(tokens, previous)` is the model's: the text of `tokens` after `previous`. */
  constructor(private readonly detokenize: (tokens: readonly number[], previous: readonly number[]) => string) {}

  /** The text that this token completes; "" while a character is still incomplete. */
  push(token: number): string {
    this.#held.push(token);
    const text = this.detokenize(this.#held, this.#previous);
    // A UTF-8 character is at most 4 bytes: past that, a U+FFFD is the model's own, not a split.
    if (text.endsWith("\uFFFD") && this.#held.length < 4) return "";
    return this.#release(text);
  }

  /** What is still held, once the answer has ended. */
  flush(): string {
    if (this.#held.length === 0) return "";
    return this.#release(this.detokenize(this.#held, this.#previous));
  }

  #release(text: string): string {
    this.#previous = [...this.#previous, ...this.#held].slice(-8);
    this.#held = [];
    return text;
  }
}
