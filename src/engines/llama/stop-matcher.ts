/**
 * Stop strings over streamed text: text is let out as soon as it cannot be
 * the start of a stop string, and a stop string found ends the answer
 * without itself (as OpenAI and llama-server leave it out).
 */
export class StopMatcher {
  #text = "";
  #emitted = 0;
  #stopped = false;

  constructor(private readonly stops: readonly string[]) {}

  /** The answer so far, cut at a stop string when one was found. */
  get text(): string {
    return this.#text;
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  /** Adds generated text; returns what may be sent now, and whether a stop string ended the answer. */
  push(piece: string): { emit: string; stopped: boolean } {
    if (this.#stopped) return { emit: "", stopped: true };
    this.#text += piece;
    let cut: number | undefined;
    for (const stop of this.stops) {
      const at = this.#text.indexOf(stop, Math.max(0, this.#emitted - stop.length));
      if (at >= 0 && (cut === undefined || at < cut)) cut = at;
    }
    if (cut !== undefined) {
      this.#text = this.#text.slice(0, cut);
      this.#stopped = true;
      const emit = this.#text.slice(this.#emitted);
      this.#emitted = this.#text.length;
      return { emit, stopped: true };
    }
    let hold = 0;
    for (const stop of this.stops) {
      for (let length = Math.min(stop.length - 1, this.#text.length); length > hold; length -= 1) {
        if (this.#text.endsWith(stop.slice(0, length))) {
          hold = length;
          break;
        }
      }
    }
    const until = Math.max(this.#emitted, this.#text.length - hold);
    const emit = this.#text.slice(this.#emitted, until);
    this.#emitted = until;
    return { emit, stopped: false };
  }

  /** What was held back as a possible stop string's start, once the answer has ended without one. */
  flush(): string {
    const emit = this.#text.slice(this.#emitted);
    this.#emitted = this.#text.length;
    return emit;
  }
}
