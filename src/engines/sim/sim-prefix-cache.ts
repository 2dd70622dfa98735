/**
 * Characters per cached block: 64, about 16 tokens at the simulated engine's
 * four characters a token, the size of vLLM's KV block, so a prompt is found
 * again as far as a real engine would find it.
 */
const blockChars = 64;
const blockTokens = blockChars / 4;

/**
 * The simulated engine's prefix cache: which prompt prefixes it has read, in
 * blocks chained from the prompt's start (a block is found only after every
 * block before it), at most `capacityTokens` tokens of them, the least
 * recently read forgotten first. A prompt's cached part is not read again, so
 * only the rest is charged to its time to first token, as vLLM's automatic
 * prefix caching and llama.cpp's slot cache do.
 */
export class SimPrefixCache {
  /** Chain hash → nothing: a Map's order is the LRU order. */
  readonly #blocks = new Map<string, true>();
  readonly #capacityBlocks: number;

  constructor(capacityTokens: number) {
    this.#capacityBlocks = Math.max(0, Math.floor(capacityTokens / blockTokens));
  }

  /**
   * Reads a prompt: the tokens of it found cached (never the whole prompt:
   * an engine computes at least the last token again to start the answer),
   * then keeps its blocks.
   */
  read(promptText: string, promptTokens: number): number {
    if (this.#capacityBlocks === 0) return 0;
    const blocks = Math.floor(promptText.length / blockChars);
    let found = 0;
    let matching = true;
    let chain = "";
    for (let index = 0; index < blocks; index += 1) {
      chain = hashBlock(chain, promptText.slice(index * blockChars, (index + 1) * blockChars));
      if (matching && this.#blocks.has(chain)) found += 1;
      else matching = false;
      this.#blocks.delete(chain);
      this.#blocks.set(chain, true);
    }
    while (this.#blocks.size > this.#capacityBlocks) this.#blocks.delete(this.#blocks.keys().next().value as string);
    return Math.max(0, Math.min(found * blockTokens, promptTokens - 1));
  }

  /** Blocks kept, for tests. */
  get blocks(): number {
    return this.#blocks.size;
  }
}

/** Two 32-bit FNV-1a lanes over the previous chain and the block, as a string key: a collision would only misreport a cache hit. */
function hashBlock(previous: string, block: string): string {
  let first = 0x811c9dc5;
  let second = 0x01000193;
  const text = previous + block;
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    first = Math.imul(first ^ code, 0x01000193);
    second = Math.imul(second ^ code, 0x5bd1e995);
  }
  return `${(first >>> 0).toString(36)}.${(second >>> 0).toString(36)}`;
}
