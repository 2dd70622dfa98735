import type { LlamaContext, LlamaContextSequence } from "node-llama-cpp";
import { chooseSlot } from "./slot-cache.js";

export interface Slot {
  readonly sequence: LlamaContextSequence;
  lastUsed: number;
  busy: boolean;
}

/**
 * The slots of one llama.cpp context: a sequence each, keeping the tokens it
 * evaluated after its request ends so the next request can reuse them.
 */
export class SlotPool {
  readonly #slots: Slot[];
  #clock = 0;

  constructor(readonly context: LlamaContext, count: number) {
    this.#slots = Array.from({ length: count }, () => ({ sequence: context.getSequence(), lastUsed: 0, busy: false }));
  }

  /** The free slot whose cached tokens share the longest prefix with the prompt, taken; undefined when all are busy. */
  take(prompt: readonly number[], cachePrompt: boolean): Slot | undefined {
    const free = this.#slots.filter((slot) => !slot.busy);
    const index = chooseSlot(
      free.map((slot) => ({ tokens: slot.sequence.contextTokens, lastUsed: slot.lastUsed })),
      prompt,
      cachePrompt,
    );
    const slot = index === undefined ? undefined : free[index];
    if (slot !== undefined) slot.busy = true;
    return slot;
  }

  release(slot: Slot): void {
    this.#clock += 1;
    slot.lastUsed = this.#clock;
    slot.busy = false;
  }

  /** Tokens held in the KV cache by all slots, and what they could hold. */
  get usage(): { used: number; capacity: number } {
    return {
      used: this.#slots.reduce((sum, slot) => sum + slot.sequence.nextTokenIndex, 0),
      capacity: this.#slots.reduce((sum, slot) => sum + slot.sequence.contextSize, 0),
    };
  }
}
