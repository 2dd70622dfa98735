import { hashText } from "./hash-text.js";

/**
 * Characters per chunk of a prompt's chain. 64 characters is about 16 tokens
 * (the gateway's estimate is 4 characters a token), vLLM's KV block: a
 * conversation's first turns and short chats are known from their first
 * hundred characters (a chunk of 256 left prompts shorter than that unknown,
 * and routed them anywhere), and an engine caches in blocks of 16 tokens or
 * more, so a finer chunk would not find more.
 */
export const prefixChunkChars = 64;

/**
 * Chunks of a prompt looked at: 512 chunks, about 8,000 tokens. Past that the
 * choice is made already (whoever holds 8,000 tokens of the prompt is the one
 * to read the rest), and the work per request stays bounded.
 */
export const prefixChunksMax = 512;

/**
 * Chain entries kept per model: 65,536, about 4 million characters of
 * distinct prompt prefixes (a million tokens, about the KV cache of a few
 * replicas of a 7B model on 80 GB cards), and about 6 MB per model.
 */
export const prefixEntriesPerModel = 65_536;

/**
 * The prompt's chain: entry i hashes chunk i and entry i-1, so an entry names
 * the whole prefix up to its chunk, not only the chunk. A prompt shorter than
 * one chunk has no chain (too short for a cache hit to matter). 32-bit hashes:
 * a collision misroutes one request, it never answers wrongly.
 */
export function prefixChain(text: string): number[] {
  const chunks = Math.min(prefixChunksMax, Math.floor(text.length / prefixChunkChars));
  const chain: number[] = [];
  let previous = 0x9e3779b9;
  for (let index = 0; index < chunks; index += 1) {
    const chunk = text.slice(index * prefixChunkChars, (index + 1) * prefixChunkChars);
    previous = hashText(chunk) ^ Math.imul(previous, 0x01000193) ^ (previous >>> 15);
    previous >>>= 0;
    chain.push(previous);
  }
  return chain;
}

/**
 * Which replica this gateway sent which prompt prefix, per model: what the
 * gateway knows of its engines' prefix caches from its own traffic. Each model
 * keeps at most `entriesPerModel` chain entries, the least recently sent
 * forgotten first (a Map's insertion order is the LRU order: an entry sent
 * again is moved to the end). A replica that leaves the routing table is
 * forgotten everywhere, so its prefixes never pull requests to a replica that
 * is gone, or to a new one that took its id with an empty cache.
 */
export class PrefixIndex {
  readonly #models = new Map<string, Map<number, string[]>>();

  constructor(private readonly entriesPerModel = prefixEntriesPerModel) {}

  /**
   * Per replica, the chunks of `chain` it is known to hold from the start
   * (a replica holds chunk i only while it holds every chunk before it).
   */
  held(model: string, chain: readonly number[]): Map<string, number> {
    const held = new Map<string, number>();
    const entries = this.#models.get(model);
    if (!entries) return held;
    let alive: Set<string> | undefined;
    for (let index = 0; index < chain.length; index += 1) {
      const holders = entries.get(chain[index] as number);
      if (!holders) break;
      const next = new Set<string>();
      for (const replica of holders) if (alive === undefined || alive.has(replica)) next.add(replica);
      if (next.size === 0) break;
      for (const replica of next) held.set(replica, index + 1);
      alive = next;
    }
    return held;
  }

  /** Notes that `replica` was sent the prompt whose chain this is: it reads it, and its engine caches it. */
  record(model: string, chain: readonly number[], replica: string): void {
    if (chain.length === 0) return;
    let entries = this.#models.get(model);
    if (!entries) {
      entries = new Map();
      this.#models.set(model, entries);
    }
    for (const hash of chain) {
      const holders = entries.get(hash);
      if (holders) {
        entries.delete(hash);
        if (!holders.includes(replica)) holders.push(replica);
        entries.set(hash, holders);
      } else {
        entries.set(hash, [replica]);
      }
    }
    while (entries.size > this.entriesPerModel) {
      const oldest = entries.keys().next().value as number;
      entries.delete(oldest);
    }
  }

  /** Forgets every replica not in `replicas` per model, and every model not in it. */
  retain(replicas: ReadonlyMap<string, ReadonlySet<string>>): void {
    for (const [model, entries] of this.#models) {
      const kept = replicas.get(model);
      if (!kept) {
        this.#models.delete(model);
        continue;
      }
      for (const [hash, holders] of entries) {
        if (holders.every((replica) => kept.has(replica))) continue;
        const left = holders.filter((replica) => kept.has(replica));
        if (left.length === 0) entries.delete(hash);
        else entries.set(hash, left);
      }
    }
  }

  /** Chain entries kept for a model (for tests and metrics). */
  size(model: string): number {
    return this.#models.get(model)?.size ?? 0;
  }
}
