/**
 * The simulated engine's "model": deterministic text, so tests can assert on
 * answers, and a token count that is approximate but always the same for the
 * same text.
 */

/** About four characters a token, the usual rule for English with BPE tokenizers. */
export function approximateTokenCount(text: string): number {
  return text.length === 0 ? 0 : Math.ceil(text.length / 4);
}

/** How many words of the prompt the answer echoes; enough to tell answers apart, short enough to be quick. */
const echoedWords = 24;

/** Words used to pad an answer when the request asks for every token (ignore_eos). */
const paddingWords = ["and", "so", "on"];

export interface SimAnswer {
  /** One entry per generated token; streamed one chunk each, joined they are the answer. */
  readonly tokens: readonly string[];
  readonly finishReason: "stop" | "length";
}

/**
 * The answer to `prompt`: "Simulated answer from MODEL: " and then the
 * prompt's first words. Each word is one token. It stops by itself (finish
 * "stop") unless max_tokens cuts it short ("length"); with ignoreEos it
 * generates exactly max_tokens, as vLLM does, for benchmarks that need a
 * fixed output length.
 */
export function simulatedAnswer(modelName: string, prompt: string, maxTokens: number | undefined, ignoreEos: boolean): SimAnswer {
  const promptWords = prompt.split(/\s+/).filter((word) => word !== "").slice(0, echoedWords);
  const words = ["Simulated", "answer", "from", `${modelName}:`, ...promptWords];
  if (promptWords.length === 0) words.push("(empty prompt)");
  if (ignoreEos && maxTokens !== undefined) {
    // Bounded by max_tokens, which the request schema caps.
    for (let index = 0; words.length < maxTokens; index += 1) words.push(paddingWords[index % paddingWords.length] ?? "and");
  }
  const limit = maxTokens ?? words.length;
  const kept = words.slice(0, limit);
  return {
    tokens: kept.map((word, index) => (index === 0 ? word : ` ${word}`)),
    finishReason: kept.length < words.length ? "length" : "stop",
  };
}

/** FNV-1a: a small, stable hash, so the same text always seeds the same vector. */
function hashText(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index += 1) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

/** mulberry32: a seeded generator with good enough spread for pretend embeddings. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4294967296;
  };
}

/** A unit vector derived from the text alone: equal texts embed equally, different texts almost never do. */
export function simulatedEmbedding(text: string, dimensions: number): number[] {
  const random = seededRandom(hashText(text));
  const vector = Array.from({ length: dimensions }, () => random() * 2 - 1);
  const norm = Math.sqrt(vector.reduce((total, value) => total + value * value, 0)) || 1;
  return vector.map((value) => value / norm);
}

/** OpenAI's base64 encoding of an embedding: little-endian float32s (the openai client asks for it by default). */
export function embeddingToBase64(vector: readonly number[]): string {
  const buffer = Buffer.alloc(vector.length * 4);
  vector.forEach((value, index) => buffer.writeFloatLE(value, index * 4));
  return buffer.toString("base64");
}
