/**
 * At most `limit` requests at once; the rest wait in arrival order, as in an
 * engine's scheduler queue. A waiting request whose client gives up leaves
 * the queue without ever taking a slot.
 */
export class ConcurrencyGate {
  #running = 0;
  readonly #waiting: { admit: () => void }[] = [];

  constructor(readonly limit: number) {}

  get running(): number {
    return this.#running;
  }

  get waiting(): number {
    return this.#waiting.length;
  }

  /** Resolves with a release function once a slot is free; rejects if `signal` aborts first. */
  acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(new Error("request abandoned while waiting"));
    if (this.#running < this.limit) {
      this.#running += 1;
      return Promise.resolve(this.#releaser());
    }
    return new Promise((resolve, reject) => {
      const entry = {
        admit: () => {
          signal?.removeEventListener("abort", onAbort);
          this.#running += 1;
          resolve(this.#releaser());
        },
      };
      const onAbort = () => {
        const index = this.#waiting.indexOf(entry);
        if (index >= 0) this.#waiting.splice(index, 1);
        reject(new Error("request abandoned while waiting"));
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiting.push(entry);
    });
  }

  #releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#running -= 1;
      this.#waiting.shift()?.admit();
    };
  }
}
