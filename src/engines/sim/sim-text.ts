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

/**
 * The sentences an answer's body is drawn from: plain prose of the length
 * and rhythm of a chat model's, which says what it is rather than pretending
 * to know anything.
 */
const bodySentences = [
  "This answer was written by the simulated engine, which stands in for a model on pretend cards.",
  "Its words are drawn from a short list, so they read like prose without meaning anything.",
  "The length follows what a chat model would write for a request like this one.",
  "A short factual question gets a sentence or two, an open question a few hundred tokens.",
  "Each word is one token, and tokens arrive at the pace the card's memory bandwidth allows.",
  "The same request with the same seed always gets the same answer, word for word.",
  "A different seed changes the words and the length, as sampling would.",
  "Set ignore_eos with max_tokens to get exactly that many tokens, as benchmarks do.",
  "Nothing here was computed by a neural network; the gateway and the clients are real.",
  "Streaming sends every token as its own event, so a client can show the answer as it grows.",
  "First, the prompt is read at the prefill rate; then each token takes one decode step.",
  "In short, the request was understood, and this is the simulated reply to it.",
];

/** Closing words of a short answer. */
const briefSentences = ["Happy to help.", "That is the short answer.", "Let me know if you want more detail.", "Hello!"];

/**
 * Token ranges of an answer's body by the kind of request, as chat models
 * answer them: a greeting or a word or two gets a line, a short factual
 * question a sentence or two, an open question (explain, describe, write,
 * compare, why, how) a few hundred tokens, anything else a paragraph or two.
 * An answer is whole sentences, so it may pass its drawn length by the rest
 * of its last sentence (at most 18 words).
 */
const bodyTokens = {
  brief: [4, 12],
  factual: [6, 20],
  open: [150, 430],
  other: [40, 160],
} as const satisfies Record<string, readonly [number, number]>;

export type RequestKind = keyof typeof bodyTokens;

const openMarkers = /\b(explain|describe|write|compare|discuss|summari[sz]e|why|how(?! (many|much|old|long|far|tall|big))|tell me about|list|essay|story|poem|plan|outline|walk me through|pros and cons|step by step)\b/i;
const factualStart = /^(who|what|when|where|which|whose|how (many|much|old|long|far|tall|big)|is|are|was|were|do|does|did|can|could|will|would|has|have|name)\b/i;

/** The kind of answer a chat model would give `prompt` (the last user message). */
export function requestKind(prompt: string): RequestKind {
  const words = prompt.split(/\s+/).filter((word) => word !== "");
  if (openMarkers.test(prompt)) return "open";
  const question = prompt.trim().endsWith("?") || factualStart.test(prompt.trim());
  if (question && words.length <= 15) return "factual";
  if (words.length <= 4) return "brief";
  return "other";
}

export interface SimAnswer {
  /** One entry per generated token; streamed one chunk each, joined they are the answer. */
  readonly tokens: readonly string[];
  readonly finishReason: "stop" | "length";
}

export interface SimAnswerRequest {
  readonly modelName: string;
  /** What the answer echoes and is sized by: the last user message, or the completion prompt. */
  readonly prompt: string;
  readonly maxTokens: number | undefined;
  readonly ignoreEos: boolean;
  /** The request's `seed`; with the whole prompt it picks the answer's length and words. */
  readonly seed?: number | undefined;
  /** Everything the request said (every message), so two conversations ending alike still differ. */
  readonly context?: string | undefined;
  /** Stop sequences: the answer ends before the first that occurs in it. */
  readonly stop?: readonly string[] | undefined;
}

/**
 * The answer to a request: a first line "Simulated answer from MODEL: " and
 * the prompt's first words, then, after a blank line, a body as long as a
 * chat model would write for such a request (requestKind), in words drawn
 * from bodySentences. Each word is one token. Length and words come from a
 * generator seeded by the request's seed and its whole prompt, so the same
 * request with the same seed always gets the same answer. It stops by itself
 * (finish "stop") unless max_tokens cuts it short ("length"); with ignoreEos
 * it generates exactly max_tokens, as vLLM does, for benchmarks that need a
 * fixed output length.
 */
export function simulatedAnswer(request: SimAnswerRequest): SimAnswer {
  const { modelName, prompt, maxTokens, ignoreEos } = request;
  const promptWords = prompt.split(/\s+/).filter((word) => word !== "").slice(0, echoedWords);
  const words = ["Simulated", "answer", "from", `${modelName}:`, ...promptWords];
  if (promptWords.length === 0) words.push("(empty prompt)");
  const random = seededRandom(hashText(`${request.seed ?? 0}\u0000${request.context ?? prompt}`));
  const kind = requestKind(prompt);
  const [fewest, most] = bodyTokens[kind];
  const bodyLength = fewest + Math.floor(random() * (most - fewest + 1));
  const body: string[] = [];
  const bank = kind === "brief" ? [...briefSentences, ...bodySentences.slice(0, 2)] : bodySentences;
  // Whole sentences, until the drawn length is reached: the answer ends as a model's does, on a full stop.
  while (body.length < bodyLength) {
    const sentence = bank[Math.floor(random() * bank.length)] ?? "";
    body.push(...sentence.split(" "));
  }
  const tokens = [...words.map((word, index) => (index === 0 ? word : ` ${word}`)), ...body.map((word, index) => (index === 0 ? `\n\n${word}` : ` ${word}`))];
  if (ignoreEos && maxTokens !== undefined) {
    // Bounded by max_tokens, which the request schema caps.
    for (let index = 0; tokens.length < maxTokens; index += 1) tokens.push(` ${paddingWords[index % paddingWords.length] ?? "and"}`);
  }
  const limit = maxTokens ?? tokens.length;
  return { tokens: tokens.slice(0, limit), finishReason: limit < tokens.length ? "length" : "stop" };
}

/** FNV-1a: a small, stable hash, so the same text always seeds the same vector. */
export function hashText(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index += 1) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

/** mulberry32: a seeded generator with good enough spread for pretend embeddings and answers. */
export function seededRandom(seed: number): () => number {
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
