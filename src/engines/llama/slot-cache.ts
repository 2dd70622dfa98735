/**
 * llama-server's prompt cache, the decisions alone: each slot keeps the
 * tokens it has evaluated; a request reuses the longest common prefix of its
 * prompt with them, and goes to the free slot whose tokens share the longest
 * prefix with its prompt (the least recently used among equals, so a cold
 * request does not evict the busiest conversation).
 */
export interface SlotView {
  readonly tokens: readonly number[];
  /** When the slot last finished a request (any monotonic clock). */
  readonly lastUsed: number;
}

export function commonPrefixLength(left: readonly number[], right: readonly number[]): number {
  const limit = Math.min(left.length, right.length);
  let index = 0;
  while (index < limit && left[index] === right[index]) index += 1;
  return index;
}

/** The index of the free slot to give a prompt, or undefined when none is free. */
export function chooseSlot(free: readonly SlotView[], prompt: readonly number[], cachePrompt: boolean): number | undefined {
  let best: number | undefined;
  let bestShared = -1;
  for (const [index, slot] of free.entries()) {
    const shared = cachePrompt ? commonPrefixLength(slot.tokens, prompt) : 0;
    const current = best === undefined ? undefined : free[best];
    if (shared > bestShared || (shared === bestShared && current !== undefined && slot.lastUsed < current.lastUsed)) {
      best = index;
      bestShared = shared;
    }
  }
  return best;
}

/**
 * How many of the prompt's tokens a slot can keep. At least the prompt's
 * last token is evaluated again even when all of it is cached: the next
 * token's probabilities come from evaluating it.
 */
export function reusableTokens(cached: readonly number[], prompt: readonly number[], cachePrompt: boolean): number {
  if (!cachePrompt) return 0;
  return Math.min(commonPrefixLength(cached, prompt), Math.max(0, prompt.length - 1));
}
