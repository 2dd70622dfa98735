import type { LlamaGrammar, LlamaModel, Token } from "node-llama-cpp";
import type { LlamaMetrics } from "./llama-metrics.js";
import type { SampledToken } from "./logprobs.js";
import { RequestFailed } from "./request-failed.js";
import type { Sampling } from "./sampling.js";
import { reusableTokens } from "./slot-cache.js";
import type { Slot } from "./slot-pool.js";
import { StopMatcher } from "./stop-matcher.js";
import { Utf8TokenDecoder } from "./utf8-token-decoder.js";

/** One choice to generate on a slot. */
export interface GenerationInput {
  readonly promptTokens: readonly Token[];
  readonly maxTokens: number | undefined;
  readonly sampling: Sampling;
  /** llama-server's cache_prompt: false evaluates the whole prompt again. */
  readonly cachePrompt: boolean;
  readonly grammar: LlamaGrammar | undefined;
  /** How many alternatives per token to report; undefined reports no log-probabilities. */
  readonly topLogprobs: number | undefined;
  readonly seed: number | undefined;
  /** OpenAI's logit_bias: token id to a bias added to its logit. */
  readonly logitBias: ReadonlyMap<Token, number>;
  /** Ends the answer when the text so far is a whole answer (a grammar's JSON), as an end-of-generation token would. */
  readonly complete?: ((text: string) => boolean) | undefined;
}

export interface Generation {
  readonly text: string;
  readonly promptTokens: number;
  /** Prompt tokens kept from the slot's cache, not evaluated again. */
  readonly cachedTokens: number;
  readonly completionTokens: number;
  readonly endOfGeneration: boolean;
  readonly stopMatched: boolean;
  readonly promptMs: number;
  readonly predictedMs: number;
  readonly sampled: readonly SampledToken[];
}

/** Text as it becomes sendable, with the log-probabilities of the tokens it came from. */
export type OnText = (text: string, sampled: readonly SampledToken[]) => void;

/**
 * Runs one choice on a slot: the prompt after the prefix the slot already
 * holds, then tokens until an end-of-generation token, a stop string,
 * max_tokens or the slot's context ends it. `onText` gets text as soon as
 * it is whole UTF-8 and cannot be the start of a stop string.
 */
export async function generate(model: LlamaModel, slot: Slot, input: GenerationInput, metrics: LlamaMetrics, signal: AbortSignal, onText: OnText): Promise<Generation> {
  const { promptTokens, sampling } = input;
  if (promptTokens.length === 0) throw new RequestFailed(400, "invalid_request_error", "the prompt is empty", "prompt");
  const sequence = slot.sequence;
  const room = sequence.contextSize - promptTokens.length;
  if (room <= 0) {
    throw new RequestFailed(400, "exceed_context_size_error", `the request exceeds the available context size: the prompt is ${promptTokens.length} tokens and a slot holds ${sequence.contextSize}`);
  }
  const limit = Math.min(input.maxTokens ?? room, room);
  const library = await import("node-llama-cpp");
  const started = performance.now();
  const cachedTokens = reusableTokens(sequence.contextTokens, promptTokens, input.cachePrompt);
  if (cachedTokens === 0) await sequence.clearHistory();
  else if (sequence.nextTokenIndex > cachedTokens) await sequence.eraseContextTokenRanges([{ start: cachedTokens, end: sequence.nextTokenIndex }]);

  let tokenBias: InstanceType<typeof library.TokenBias> | undefined;
  if (input.logitBias.size > 0) {
    tokenBias = new library.TokenBias(model.tokenizer);
    // TokenBias.set skips end-of-generation tokens, but llama-server (and OpenAI) bias them like any
    // other: their entries go straight into its map, and a node-llama-cpp without one refuses the request.
    const biases = (tokenBias as unknown as { _biases?: unknown })._biases;
    for (const [token, bias] of input.logitBias) {
      const logit = bias <= -100 ? Number.NEGATIVE_INFINITY : bias;
      if (!model.isEogToken(token)) tokenBias.set(token, { logit });
      else if (biases instanceof Map) biases.set(token, logit);
      else throw new RequestFailed(400, "invalid_request_error", `logit_bias on the end-of-generation token ${token} is not supported by this node-llama-cpp`, "logit_bias");
    }
  }
  const grammarState = input.grammar === undefined ? undefined : new library.LlamaGrammarEvaluationState({ model, grammar: input.grammar });
  const wantProbabilities = input.topLogprobs !== undefined;
  const stop = new StopMatcher(sampling.stop);
  const decoder = new Utf8TokenDecoder((tokens, previous) => model.detokenize(tokens as Token[], false, previous as Token[]));
  let unsent: SampledToken[] = [];
  const sampled: SampledToken[] = [];
  let generated = 0;
  let endOfGeneration = false;
  let firstToken: number | undefined;
  const emit = (piece: string): void => {
    const { emit: text } = stop.push(piece);
    if (text !== "") {
      onText(text, unsent);
      unsent = [];
    }
  };
  const tokens = sequence.evaluateWithMetadata([...promptTokens.slice(cachedTokens)], { probabilities: wantProbabilities }, {
    temperature: sampling.temperature,
    topP: sampling.top_p,
    topK: sampling.top_k,
    minP: sampling.min_p,
    ...(input.seed !== undefined ? { seed: input.seed } : {}),
    ...(tokenBias !== undefined ? { tokenBias } : {}),
    ...(grammarState !== undefined ? { grammarEvaluationState: grammarState } : {}),
    ...(sampling.frequency_penalty !== 0 || sampling.presence_penalty !== 0
      ? { repeatPenalty: { punishTokens: () => sequence.contextTokens.slice(promptTokens.length), penalty: 1, frequencyPenalty: sampling.frequency_penalty, presencePenalty: sampling.presence_penalty } }
      : {}),
    // Without it node-llama-cpp ends the loop silently at the end-of-generation token, and a finished answer would read as cut at max_tokens.
    yieldEogToken: true,
  });
  for await (const output of tokens) {
    firstToken ??= performance.now();
    if (signal.aborted) break;
    if (model.isEogToken(output.token)) {
      endOfGeneration = true;
      break;
    }
    generated += 1;
    if (wantProbabilities) {
      const probabilities = (output as { probabilities?: Map<Token, number> }).probabilities ?? new Map<Token, number>();
      const text = model.detokenize([output.token], false);
      const alternatives = [...probabilities.entries()].slice(0, Math.max(1, input.topLogprobs)).map(([token, probability]) => ({ text: model.detokenize([token], false), probability }));
      const entry = { text, probability: probabilities.get(output.token) ?? 0, alternatives };
      sampled.push(entry);
      unsent.push(entry);
    }
    const piece = decoder.push(output.token);
    if (piece !== "") emit(piece);
    if (stop.stopped) break;
    if (piece !== "" && input.complete?.(stop.text) === true) {
      endOfGeneration = true;
      break;
    }
    if (generated >= limit) break;
  }
  if (!stop.stopped) {
    const held = decoder.flush();
    if (held !== "") emit(held);
    const rest = stop.flush();
    if (rest !== "" || unsent.length > 0) onText(rest, unsent);
  }
  const ended = performance.now();
  const promptMs = (firstToken ?? ended) - started;
  const predictedMs = ended - (firstToken ?? ended);
  const evaluated = promptTokens.length - cachedTokens;
  metrics.record({ tokens: evaluated, cached: cachedTokens, seconds: promptMs / 1000 }, { tokens: generated, seconds: predictedMs / 1000 });
  return { text: stop.text, promptTokens: promptTokens.length, cachedTokens, completionTokens: generated, endOfGeneration, stopMatched: stop.stopped, promptMs, predictedMs, sampled };
}
