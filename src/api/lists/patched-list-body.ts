import { laidOutJsonList } from "./json-list-body.js";

/** One item of the list as kept: its JSON bytes before and after the value that moves. */
export interface SplitItem {
  readonly head: Buffer;
  readonly tail: Buffer;
}

/**
 * A whole list's answer, `{"<field>":[…]}`, in which each item has one value
 * that moves at nearly every read (a node's last_seen_at, at every beat),
 * kept as one buffer and patched in place where a value moved. Built afresh
 * per read, the 2 MB answer of 1,000 nodes was a fresh allocation outside
 * V8's heap at every read, and reads back to back made V8 run full
 * collections of the control plane's whole heap for it: about half of each
 * `/nodes` read's time in a CPU profile.
 *
 * A buffer a reply is still sending is never written to (the socket holds it
 * until the kernel has taken every byte): the next patch then goes to a copy,
 * which becomes the kept one.
 */
export class PatchedListBody {
  #body: Buffer;
  /** Where each item's value starts in the body, and its length in bytes. */
  readonly #offsets: number[] = [];
  readonly #lengths: number[] = [];
  #values: readonly string[];
  /** Replies still sending the current body; a copy starts at none. */
  #sending = 0;
  #generation = 0;

  /** `values`: each item's value as JSON text (`"2026-12-04T10:00:00.000Z"`), in the items' order. */
  constructor(field: string, items: readonly SplitItem[], values: readonly string[]) {
    const valueBytes = items.map((_, index) => Buffer.from(values[index] ?? "null"));
    const { body, starts } = laidOutJsonList(field, items.map((item, index) => [item.head, valueBytes[index] as Buffer, item.tail]));
    items.forEach((item, index) => {
      this.#offsets.push((starts[index] as number) + item.head.length);
      this.#lengths.push((valueBytes[index] as Buffer).length);
    });
    this.#body = body;
    this.#values = values;
  }

  get body(): Buffer {
    return this.#body;
  }

  /**
   * The answer with these values, or undefined when it cannot be patched in
   * place (another number of items, or a value of another length in bytes):
   * build a new one then.
   */
  patched(values: readonly string[]): Buffer | undefined {
    if (values.length !== this.#values.length) return undefined;
    const moved: number[] = [];
    for (let index = 0; index < values.length; index += 1) {
      const value = values[index] as string;
      if (value === this.#values[index]) continue;
      if (Buffer.byteLength(value) !== this.#lengths[index]) return undefined;
      moved.push(index);
    }
    if (moved.length === 0) return this.#body;
    if (this.#sending > 0) {
      this.#body = Buffer.from(this.#body);
      this.#sending = 0;
      this.#generation += 1;
    }
    for (const index of moved) this.#body.write(values[index] as string, this.#offsets[index] as number, "utf8");
    this.#values = values;
    return this.#body;
  }

  /** Notes that a reply is sending the current body; call what it returns once the reply has finished or closed (once or more). */
  sending(): () => void {
    this.#sending += 1;
    const generation = this.#generation;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      // A reply of a body since replaced by a copy holds nothing the patches touch.
      if (generation === this.#generation) this.#sending -= 1;
    };
  }
}
