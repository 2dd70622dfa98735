import { randomBytes, randomInt } from "node:crypto";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { LlamaGrammar, Token } from "node-llama-cpp";
import { describeIssues } from "../../catalog/for-engines.js";
import { postWithBody } from "../openai-server/body-route.js";
import { errorBody, paramOfIssues } from "../openai-server/openai-error-body.js";
import { AnswerStream } from "./answer-stream.js";
import { chatConstraint, declaredTools, type ChatConstraint } from "./chat-constraint.js";
import { renderChatPrompt } from "./chat-prompt.js";
import { withSlot, type Loaded, type RouteContext } from "./engine-state.js";
import { finishReason } from "./finish-reason.js";
import { generate, type Generation } from "./generation.js";
import { jsonComplete } from "./json-complete.js";
import { llamaChatRequestSchema, llamaCompletionRequestSchema } from "./llama-request-schemas.js";
import { chatLogprobs, legacyLogprobs, type SampledToken } from "./logprobs.js";
import { asRequestFailed, failureBody, llamaBodyRefusal, RequestFailed, sendFailure, unsupported } from "./request-failed.js";
import { samplingSchema, type Sampling } from "./sampling.js";
import { StopMatcher } from "./stop-matcher.js";
import { readAutoCalls, readRequiredCalls, type ToolCall } from "./tool-calls.js";

/** What one chat or completion request asks of the generation loop. */
interface AnswerRequest {
  readonly kind: "chat" | "text";
  readonly promptTokens: readonly Token[];
  readonly maxTokens: number | undefined;
  readonly choices: number;
  readonly stream: boolean;
  readonly includeUsage: boolean;
  readonly sampling: Sampling;
  readonly cachePrompt: boolean;
  readonly constraint: ChatConstraint;
  readonly topLogprobs: number | undefined;
  readonly logitBias: ReadonlyMap<Token, number>;
  readonly lora: readonly { id: number; scale: number }[] | undefined;
}

/** /v1/chat/completions and /v1/completions, in OpenAI's shapes with llama-server's timings. */
export function registerGenerateRoutes(server: FastifyInstance, route: RouteContext, readyToGenerate: (reply: FastifyReply) => Loaded | undefined): void {
  postWithBody(server, "/v1/chat/completions", llamaChatRequestSchema, llamaBodyRefusal, async (data, request, reply) => {
    const state = readyToGenerate(reply);
    if (state === undefined) return reply;
    if (state.template === undefined) return reply.code(500).send(errorBody(500, "server_error", `${route.args.model} has no chat template (tokenizer.chat_template); use /v1/completions`));
    try {
      refuseUnsupported(request.body);
      if (data.top_logprobs !== null && data.top_logprobs !== undefined && data.logprobs !== true) throw unsupported("top_logprobs", "top_logprobs needs logprobs set to true");
      const constraint = chatConstraint(data);
      // Declared tools are in every prompt, tool_choice none too: the prompt's prefix then stays the same from turn to turn, and the slot's cache holds.
      const tools = declaredTools(data);
      const special = (token: Token | null) => (token === null ? "" : state.model.detokenize([token], true));
      const prompt = renderChatPrompt(state.template, state.templateTakesTools, data, tools, { bos: special(state.model.tokens.bos), eos: special(state.model.tokens.eos) });
      return await serveAnswer(request, reply, {
        kind: "chat",
        promptTokens: state.model.tokenize(prompt, true),
        maxTokens: data.max_completion_tokens ?? data.max_tokens ?? undefined,
        choices: data.n ?? 1,
        stream: data.stream ?? false,
        includeUsage: data.stream_options?.include_usage ?? false,
        sampling: readSampling(request.body),
        cachePrompt: data.cache_prompt ?? true,
        constraint,
        topLogprobs: data.logprobs === true ? (data.top_logprobs ?? 0) : undefined,
        logitBias: readLogitBias(data.logit_bias, state, data.ignore_eos),
        lora: data.lora ?? undefined,
      });
    } catch (error) {
      return sendFailure(reply, error);
    }
  });

  postWithBody(server, "/v1/completions", llamaCompletionRequestSchema, llamaBodyRefusal, async (data, request, reply) => {
    const state = readyToGenerate(reply);
    if (state === undefined) return reply;
    try {
      refuseUnsupported(request.body);
      if (data.echo === true) throw unsupported("echo", "echo is not served by the built-in engine; prepend the prompt yourself");
      if (data.suffix !== null && data.suffix !== undefined) throw unsupported("suffix", "suffix (insertion) is not served by the built-in engine");
      if (data.best_of !== null && data.best_of !== undefined && data.best_of !== (data.n ?? 1)) throw unsupported("best_of", "best_of is not served by the built-in engine; ask for n choices instead");
      const prompt = data.prompt;
      const first = Array.isArray(prompt) ? prompt[0] : prompt;
      const promptTokens = typeof first === "string" ? state.model.tokenize(first, true) : Array.isArray(first) ? (first as Token[]) : (prompt as Token[]);
      return await serveAnswer(request, reply, {
        kind: "text",
        promptTokens,
        maxTokens: data.max_tokens ?? undefined,
        choices: data.n ?? 1,
        stream: data.stream ?? false,
        includeUsage: data.stream_options?.include_usage ?? false,
        sampling: readSampling(request.body),
        cachePrompt: data.cache_prompt ?? true,
        constraint: { kind: "text" },
        topLogprobs: data.logprobs ?? undefined,
        logitBias: readLogitBias(data.logit_bias, state, data.ignore_eos),
        lora: data.lora ?? undefined,
      });
    } catch (error) {
      return sendFailure(reply, error);
    }
  });

  async function serveAnswer(request: FastifyRequest, reply: FastifyReply, answer: AnswerRequest): Promise<FastifyReply> {
    const { args, metrics } = route;
    const unknownAdapter = answer.lora?.find((entry) => entry.id < 0 || entry.id >= args.adapters.length);
    if (unknownAdapter !== undefined) throw unsupported("lora", `lora id ${unknownAdapter.id} is not one of the ${args.adapters.length} adapters this server loaded`);
    const scales = args.adapters.map((adapter, index) => answer.lora?.find((entry) => entry.id === index)?.scale ?? adapter.scale);
    const header = { id: `${answer.kind === "chat" ? "chatcmpl" : "cmpl"}-${randomBytes(12).toString("hex")}`, kind: answer.kind, created: Math.floor(Date.now() / 1000), model: route.modelName };
    const grammar = await grammarFor(route.state() as Loaded, answer.constraint);
    const stream = answer.stream ? new AnswerStream(reply, header) : undefined;
    const shapeLogprobs = (sampled: readonly SampledToken[]) =>
      answer.topLogprobs === undefined ? null : answer.kind === "chat" ? { content: chatLogprobs(sampled, answer.topLogprobs).content } : legacyLogprobs(sampled, answer.topLogprobs);
    try {
      const outcomes = await withSlot(route, request, scales, answer.promptTokens, answer.cachePrompt, async (state, slot, signal) => {
        const results = [];
        for (let index = 0; index < answer.choices; index += 1) {
          stream?.begin(index);
          // Text that may turn into a call is held from "<tool_call>" on, so a call never streams as content.
          const marker = answer.constraint.kind === "tools-auto" ? new StopMatcher(["<tool_call>"]) : undefined;
          const generation = await generate(
            state.model,
            slot,
            // Each choice its own seed: one seed for all would give n copies of one answer.
            { ...answer, grammar, seed: answer.sampling.seed === undefined ? randomInt(2 ** 32) : (answer.sampling.seed + index) >>> 0, complete: grammar === undefined ? undefined : jsonComplete },
            metrics,
            signal,
            (text, sampled) => {
              if (stream === undefined || answer.constraint.kind === "tools-required") return;
              stream.content(index, marker === undefined ? text : marker.push(text).emit, shapeLogprobs(sampled));
            },
          );
          const outcome = readOutcome(generation, answer.constraint);
          if (stream !== undefined) {
            if (marker !== undefined && !marker.stopped) stream.content(index, marker.flush(), null);
            const streamed = marker?.text ?? (answer.constraint.kind === "tools-required" ? "" : outcome.content);
            if (outcome.calls.length > 0) stream.toolCalls(index, outcome.calls);
            else if (outcome.content.length > streamed.length) stream.content(index, outcome.content.slice(streamed.length), null);
            stream.finish(index, outcome.finish, timingsOf([generation]));
          }
          results.push({ generation, ...outcome });
        }
        return results;
      });
      const generations = outcomes.map((outcome) => outcome.generation);
      const completionTokens = generations.reduce((sum, generation) => sum + generation.completionTokens, 0);
      const cachedTokens = generations[0]?.cachedTokens ?? 0;
      const usage = {
        prompt_tokens: answer.promptTokens.length,
        completion_tokens: completionTokens,
        total_tokens: answer.promptTokens.length + completionTokens,
        prompt_tokens_details: { cached_tokens: cachedTokens },
      };
      route.log(`POST /v1/${answer.kind === "chat" ? "chat/completions" : "completions"} prompt_tokens=${usage.prompt_tokens} cached_tokens=${cachedTokens} completion_tokens=${completionTokens} finish=${outcomes.map((outcome) => outcome.finish).join(",")}`);
      if (stream !== undefined) {
        if (answer.includeUsage) stream.usage(usage);
        stream.end();
        return reply;
      }
      const choices = outcomes.map((outcome, index) =>
        answer.kind === "chat"
          ? {
              index,
              message: { role: "assistant", content: outcome.calls.length > 0 && outcome.content === "" ? null : outcome.content, ...(outcome.calls.length > 0 ? { tool_calls: outcome.calls } : {}) },
              logprobs: shapeLogprobs(outcome.generation.sampled),
              finish_reason: outcome.finish,
            }
          : { index, text: outcome.content, logprobs: shapeLogprobs(outcome.generation.sampled), finish_reason: outcome.finish },
      );
      return reply.send({ id: header.id, object: answer.kind === "chat" ? "chat.completion" : "text_completion", created: header.created, model: header.model, choices, usage, timings: timingsOf(generations) });
    } catch (error) {
      if (stream === undefined || !stream.started) throw error;
      stream.fail(failureBody(asRequestFailed(error)));
      return reply;
    }
  }
}

/** A choice's text read as the constraint says: calls out of a required or auto answer, the rest as content. */
function readOutcome(generation: Generation, constraint: ChatConstraint): { content: string; calls: ToolCall[]; finish: ReturnType<typeof finishReason> } {
  let content = generation.text;
  let calls: ToolCall[] = [];
  if (constraint.kind === "tools-required" && generation.endOfGeneration) {
    calls = readRequiredCalls(generation.text, constraint.tools);
    content = "";
  } else if (constraint.kind === "tools-auto") {
    ({ content, calls } = readAutoCalls(generation.text, constraint.tools, constraint.parallel));
  }
  return { content, calls, finish: finishReason({ endOfGeneration: generation.endOfGeneration, stopMatched: generation.stopMatched, toolCalls: calls.length > 0 }) };
}

/** llama-server's timings: prompt_n is what was evaluated, cache_n what the slot's cache held. */
function timingsOf(generations: readonly Generation[]) {
  const first = generations[0];
  const promptN = first === undefined ? 0 : first.promptTokens - first.cachedTokens;
  const promptMs = first?.promptMs ?? 0;
  const predictedN = generations.reduce((sum, generation) => sum + generation.completionTokens, 0);
  const predictedMs = generations.reduce((sum, generation) => sum + generation.predictedMs, 0);
  return {
    cache_n: first?.cachedTokens ?? 0,
    prompt_n: promptN,
    prompt_ms: promptMs,
    prompt_per_token_ms: promptN > 0 ? promptMs / promptN : null,
    prompt_per_second: promptMs > 0 ? (promptN * 1000) / promptMs : null,
    predicted_n: predictedN,
    predicted_ms: predictedMs,
    predicted_per_token_ms: predictedN > 0 ? predictedMs / predictedN : null,
    predicted_per_second: predictedMs > 0 ? (predictedN * 1000) / predictedMs : null,
  };
}

async function grammarFor(state: Loaded, constraint: ChatConstraint): Promise<LlamaGrammar | undefined> {
  const llama = state.runtime.llama;
  try {
    if (constraint.kind === "json") return constraint.schema === undefined ? await llama.getGrammarFor("json") : await llama.createGrammarForJsonSchema(constraint.schema as never);
    if (constraint.kind === "tools-required") return await llama.createGrammarForJsonSchema(constraint.schema as never);
  } catch (error) {
    const param = constraint.kind === "json" ? "response_format" : "tools";
    throw unsupported(param, `the built-in engine cannot build a grammar for ${param}: ${error instanceof Error ? error.message : String(error)}`);
  }
  return undefined;
}

/** OpenAI fields the engine cannot honour: refused by name, never answered as if they were not there. */
function refuseUnsupported(body: unknown): void {
  const fields = body as Record<string, unknown>;
  const modalities = fields.modalities;
  if (Array.isArray(modalities) && modalities.some((modality) => modality !== "text")) throw unsupported("modalities", "this model answers in text only (modalities: [\"text\"])");
  for (const name of ["audio", "prediction", "web_search_options"]) {
    if (fields[name] !== undefined && fields[name] !== null) throw unsupported(name, `${name} is not served by the built-in llama.cpp engine`);
  }
}

function readSampling(body: unknown): Sampling {
  const parsed = samplingSchema.safeParse(body);
  if (!parsed.success) throw new RequestFailed(400, "invalid_request_error", describeIssues(parsed.error.issues, "request body"), paramOfIssues(parsed.error.issues));
  return parsed.data;
}

/** OpenAI's logit_bias by token id; with ignore_eos (llama-server's and vLLM's) the end-of-turn tokens are never sampled. */
function readLogitBias(bias: Record<string, number> | null | undefined, state: Loaded, ignoreEos: boolean | null | undefined): Map<Token, number> {
  const result = new Map<Token, number>();
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- a GGUF file's metadata is outside input: its types promise keys a file may lack
  const vocabulary = state.model.fileInfo.metadata.tokenizer?.ggml?.tokens?.length ?? Number.POSITIVE_INFINITY;
  for (const [key, value] of Object.entries(bias ?? {})) {
    const token = Number(key);
    if (!Number.isInteger(token) || token < 0 || token >= vocabulary) throw unsupported("logit_bias", `logit_bias key "${key}" is not a token id of this model (0 to ${vocabulary - 1})`);
    result.set(token as Token, value);
  }
  if (ignoreEos === true) {
    for (const token of [state.model.tokens.eos, state.model.tokens.eot]) if (token !== null) result.set(token, -100);
  }
  return result;
}
