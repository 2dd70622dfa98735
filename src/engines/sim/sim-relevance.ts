import { hashText } from "./sim-text.js";

/**
 * A reranker's relevance score, simulated: the share of the query's words
 * found in the document, squeezed into (0, 1) with a small jitter fixed by
 * the pair's text. A document that repeats the query ranks first, one that
 * shares nothing last, which is all a test of a rerank pipeline needs to see.
 */
export function simulatedRelevance(query: string, document: string): number {
  const words = (text: string) => new Set(text.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter((word) => word.length > 0));
  const asked = words(query);
  const present = words(document);
  const shared = [...asked].filter((word) => present.has(word)).length;
  const overlap = asked.size === 0 ? 0 : shared / asked.size;
  const jitter = (hashText(`${query}\u0000${document}`) % 1000) / 1000 / 25;
  return Math.round((0.02 + 0.9 * overlap + jitter) * 1e6) / 1e6;
}
