/**
 * Token log-probabilities in OpenAI's two shapes: chat's
 * `choices[].logprobs.content[]` and the legacy completions' parallel lists.
 * The probabilities are node-llama-cpp's, after the request's sampling
 * (temperature, top-k/p, grammar) was applied to the model's distribution.
 */
export interface SampledToken {
  readonly text: string;
  readonly probability: number;
  /** The likeliest tokens at this step, likeliest first. */
  readonly alternatives: readonly { readonly text: string; readonly probability: number }[];
}

/** ln(p), kept finite: JSON has no -Infinity, and OpenAI itself reports -9999 for a token of no chance. */
export function logprob(probability: number): number {
  return probability > 0 ? Math.max(-9999, Math.log(probability)) : -9999;
}

const bytes = (text: string) => [...Buffer.from(text, "utf8")];

export interface ChatTokenLogprob {
  readonly token: string;
  readonly logprob: number;
  readonly bytes: number[];
  readonly top_logprobs: { token: string; logprob: number; bytes: number[] }[];
}

export function chatLogprobs(tokens: readonly SampledToken[], top: number): { content: ChatTokenLogprob[]; refusal: null } {
  return {
    content: tokens.map((token) => ({
      token: token.text,
      logprob: logprob(token.probability),
      bytes: bytes(token.text),
      top_logprobs: token.alternatives.slice(0, top).map((alternative) => ({ token: alternative.text, logprob: logprob(alternative.probability), bytes: bytes(alternative.text) })),
    })),
    refusal: null,
  };
}

export interface LegacyLogprobs {
  readonly tokens: string[];
  readonly token_logprobs: number[];
  readonly top_logprobs: Record<string, number>[];
  readonly text_offset: number[];
}

/** The legacy shape; `offset` is where the answer's text starts (the prompt's length when it is echoed, else 0). */
export function legacyLogprobs(tokens: readonly SampledToken[], top: number, offset = 0): LegacyLogprobs {
  const textOffset: number[] = [];
  let at = offset;
  for (const token of tokens) {
    textOffset.push(at);
    at += token.text.length;
  }
  return {
    tokens: tokens.map((token) => token.text),
    token_logprobs: tokens.map((token) => logprob(token.probability)),
    top_logprobs: tokens.map((token) => Object.fromEntries(token.alternatives.slice(0, top).map((alternative) => [alternative.text, logprob(alternative.probability)]))),
    text_offset: textOffset,
  };
}
