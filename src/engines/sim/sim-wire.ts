import { simulatedLogprobs, tokenBytes, type SimChoice, type SimTokenLogprob } from "./sim-choices.js";

/**
 * The wire forms of a simulated generation, one per route: what each
 * streamed event and the whole answer look like in chat completions, legacy
 * completions and the Responses API, as vLLM writes them.
 */

/** What one generation decodes, before its wire form. */
export interface DecodePlan {
  /** For the log line. */
  readonly route: string;
  readonly model: string;
  readonly idPrefix: string;
  readonly promptTokens: number;
  /** The prompt as the engine reads it, for its prefix cache; absent where nothing is cached. */
  readonly promptText?: string;
  readonly stream: boolean;
  /** Built once a slot is free, so a queued request holds no answer in memory. */
  readonly choices: () => SimChoice[];
}

export interface DecodeContext {
  readonly id: string;
  readonly created: number;
  readonly choices: readonly SimChoice[];
  readonly usage: {
    readonly prompt_tokens: number;
    readonly completion_tokens: number;
    readonly total_tokens: number;
    readonly prompt_tokens_details?: { readonly cached_tokens: number };
  };
}

/** Writes one SSE event: `data:` alone, or with an `event:` line (the Responses API names each). */
export type SendEvent = (payload: unknown, event?: string) => void;

export interface DecodeWire {
  open(send: SendEvent, context: DecodeContext): void;
  /** The token at `position` of choice `index` is due. */
  token(send: SendEvent, context: DecodeContext, index: number, position: number): void;
  close(send: SendEvent, context: DecodeContext): void;
  /** Whether the stream ends with `data: [DONE]` (chat and completions do; the Responses API does not). */
  readonly done: boolean;
  whole(context: DecodeContext): unknown;
}

function chatLogprobsEntry(entry: SimTokenLogprob) {
  return {
    token: entry.token,
    logprob: entry.logprob,
    bytes: tokenBytes(entry.token),
    top_logprobs: entry.top.map((alternative) => ({ token: alternative.token, logprob: alternative.logprob, bytes: tokenBytes(alternative.token) })),
  };
}

/** Each choice's log probabilities, computed once per request. */
function logprobsOf(context: DecodeContext, top: number | undefined, seed: number): (SimTokenLogprob[] | undefined)[] {
  return context.choices.map((choice, index) => (top === undefined ? undefined : simulatedLogprobs(choice.tokens, top, seed + index)));
}

/** The last events of a chat or completions stream: each choice's finish reason, then the usage when asked. */
function closeChoices(send: SendEvent, context: DecodeContext, object: string, model: string, includeUsage: boolean, empty: Record<string, unknown>): void {
  for (const [index, choice] of context.choices.entries()) {
    send({ id: context.id, object, created: context.created, model, choices: [{ index, ...empty, logprobs: null, finish_reason: choice.finishReason }] });
  }
  if (includeUsage) send({ id: context.id, object, created: context.created, model, choices: [], usage: context.usage });
}

/** A whole (not streamed) chat or completions answer around its choices. */
function wholeAnswer(context: DecodeContext, object: string, model: string, choice: (choice: SimChoice, index: number) => unknown) {
  return { id: context.id, object, created: context.created, model, choices: context.choices.map(choice), usage: context.usage };
}

/** The index of the tool call that token `position` of `choice` belongs to. */
export function callIndexAt(choice: SimChoice, position: number): number {
  const calls = choice.toolCalls ?? [];
  let found = 0;
  for (const [index, call] of calls.entries()) if (call.firstToken <= position) found = index;
  return found;
}

/** Each tool call of `choice` with its whole arguments. */
export function callsWithArguments(choice: SimChoice): { id: string; name: string; arguments: string }[] {
  const calls = choice.toolCalls ?? [];
  return calls.map((call, index) => ({ id: call.id, name: call.name, arguments: choice.tokens.slice(call.firstToken, calls[index + 1]?.firstToken).join("") }));
}

/** The chat completions API (`chat.completion`, `chat.completion.chunk`). */
export function chatWire(model: string, includeUsage: boolean, topLogprobs: number | undefined, seed: number): DecodeWire {
  let logprobs: (SimTokenLogprob[] | undefined)[] = [];
  const chunk = (send: SendEvent, context: DecodeContext, choices: unknown[]) => send({ id: context.id, object: "chat.completion.chunk", created: context.created, model, choices });
  // A call's first chunk carries its id and name, as OpenAI and vLLM stream them; its arguments follow in pieces.
  const header = (choice: SimChoice, index: number) => {
    const call = choice.toolCalls?.[index];
    return call === undefined ? [] : [{ index, id: call.id, type: "function", function: { name: call.name, arguments: "" } }];
  };
  return {
    done: true,
    open(send, context) {
      logprobs = logprobsOf(context, topLogprobs, seed);
      for (const [index, choice] of context.choices.entries()) {
        const delta = choice.toolCalls ? { role: "assistant", content: null, tool_calls: header(choice, 0) } : { role: "assistant", content: "" };
        chunk(send, context, [{ index, delta, logprobs: null, finish_reason: null }]);
      }
    },
    token(send, context, index, position) {
      const choice = context.choices[index] as SimChoice;
      const token = choice.tokens[position] ?? "";
      const entry = logprobs[index]?.[position];
      const call = callIndexAt(choice, position);
      if (call > 0 && choice.toolCalls?.[call]?.firstToken === position) chunk(send, context, [{ index, delta: { tool_calls: header(choice, call) }, logprobs: null, finish_reason: null }]);
      const delta = choice.toolCalls ? { tool_calls: [{ index: call, function: { arguments: token } }] } : { content: token };
      chunk(send, context, [{ index, delta, logprobs: entry ? { content: [chatLogprobsEntry(entry)] } : null, finish_reason: null }]);
    },
    close(send, context) {
      closeChoices(send, context, "chat.completion.chunk", model, includeUsage, { delta: {} });
    },
    whole(context) {
      logprobs = logprobsOf(context, topLogprobs, seed);
      return wholeAnswer(context, "chat.completion", model, (choice, index) => {
        const message = choice.toolCalls
          ? { role: "assistant", content: null, tool_calls: callsWithArguments(choice).map((call) => ({ id: call.id, type: "function", function: { name: call.name, arguments: call.arguments } })) }
          : { role: "assistant", content: choice.tokens.join("") };
        const entries = logprobs[index];
        return { index, message, logprobs: entries ? { content: entries.map(chatLogprobsEntry) } : null, finish_reason: choice.finishReason };
      });
    },
  };
}

/** The legacy completions API's logprobs: parallel lists, and a map of alternatives per token. */
function completionLogprobs(entries: readonly SimTokenLogprob[], offset: number) {
  const textOffset: number[] = [];
  let at = offset;
  for (const entry of entries) {
    textOffset.push(at);
    at += entry.token.length;
  }
  return {
    tokens: entries.map((entry) => entry.token),
    token_logprobs: entries.map((entry) => entry.logprob),
    top_logprobs: entries.map((entry) => Object.fromEntries(entry.top.map((alternative) => [alternative.token, alternative.logprob]))),
    text_offset: textOffset,
  };
}

/** The legacy completions API (`text_completion`). */
export function completionWire(model: string, includeUsage: boolean, logprobsCount: number | undefined, seed: number): DecodeWire {
  let logprobs: (SimTokenLogprob[] | undefined)[] = [];
  const chunk = (send: SendEvent, context: DecodeContext, choices: unknown[]) => send({ id: context.id, object: "text_completion", created: context.created, model, choices });
  return {
    done: true,
    open(_send, context) {
      logprobs = logprobsOf(context, logprobsCount, seed);
    },
    token(send, context, index, position) {
      const choice = context.choices[index] as SimChoice;
      const entry = logprobs[index]?.[position];
      const offset = choice.tokens.slice(0, position).join("").length;
      chunk(send, context, [{ index, text: choice.tokens[position] ?? "", logprobs: entry ? completionLogprobs([entry], offset) : null, finish_reason: null }]);
    },
    close(send, context) {
      closeChoices(send, context, "text_completion", model, includeUsage, { text: "" });
    },
    whole(context) {
      logprobs = logprobsOf(context, logprobsCount, seed);
      return wholeAnswer(context, "text_completion", model, (choice, index) => {
        const entries = logprobs[index];
        return { index, text: choice.tokens.join(""), logprobs: entries ? completionLogprobs(entries, 0) : null, finish_reason: choice.finishReason };
      });
    },
  };
}

/** OpenAI's Responses API (`response`, and its named stream events): a message, or one function_call item per tool call. */
export function responsesWire(model: string, request: { readonly instructions: string | null; readonly maxOutputTokens: number | null }): DecodeWire {
  let sequence = 0;
  const choiceOf = (context: DecodeContext) => context.choices[0] as SimChoice;
  const itemId = (context: DecodeContext, call = 0) => (choiceOf(context).toolCalls ? `fc_${context.id}-${call}` : `msg_${context.id}`);
  const event = (send: SendEvent, type: string, fields: Record<string, unknown>) => send({ type, sequence_number: sequence++, ...fields }, type);
  const items = (context: DecodeContext, done: boolean) => {
    const choice = choiceOf(context);
    const status = done ? "completed" : "in_progress";
    if (choice.toolCalls) {
      return callsWithArguments(choice).map((call, index) => ({ type: "function_call", id: itemId(context, index), call_id: call.id, name: call.name, arguments: done ? call.arguments : "", status }));
    }
    const text = choice.tokens.join("");
    return [{ type: "message", id: itemId(context), status, role: "assistant", content: done ? [{ type: "output_text", text, annotations: [], logprobs: [] }] : [] }];
  };
  const response = (context: DecodeContext, state: "in_progress" | "done") => {
    const cut = choiceOf(context).finishReason === "length";
    return {
      id: context.id,
      object: "response",
      created_at: context.created,
      status: state === "in_progress" ? "in_progress" : cut ? "incomplete" : "completed",
      incomplete_details: state === "done" && cut ? { reason: "max_output_tokens" } : null,
      error: null,
      model,
      instructions: request.instructions,
      max_output_tokens: request.maxOutputTokens,
      output: state === "done" ? items(context, true) : [],
      parallel_tool_calls: true,
      tool_choice: "auto",
      tools: [],
      temperature: 1,
      top_p: 1,
      truncation: "disabled",
      metadata: {},
      usage:
        state === "done"
          ? {
              input_tokens: context.usage.prompt_tokens,
              input_tokens_details: { cached_tokens: context.usage.prompt_tokens_details?.cached_tokens ?? 0 },
              output_tokens: context.usage.completion_tokens,
              output_tokens_details: { reasoning_tokens: 0 },
              total_tokens: context.usage.total_tokens,
            }
          : null,
    };
  };
  const callDone = (send: SendEvent, context: DecodeContext, call: number) => {
    const item = items(context, true)[call];
    event(send, "response.function_call_arguments.done", { item_id: itemId(context, call), output_index: call, arguments: (item as { arguments: string }).arguments });
    event(send, "response.output_item.done", { output_index: call, item });
  };
  return {
    done: false,
    open(send, context) {
      event(send, "response.created", { response: response(context, "in_progress") });
      event(send, "response.in_progress", { response: response(context, "in_progress") });
      event(send, "response.output_item.added", { output_index: 0, item: items(context, false)[0] });
      if (!choiceOf(context).toolCalls) event(send, "response.content_part.added", { item_id: itemId(context), output_index: 0, content_index: 0, part: { type: "output_text", text: "", annotations: [] } });
    },
    token(send, context, _index, position) {
      const choice = choiceOf(context);
      const delta = choice.tokens[position] ?? "";
      if (!choice.toolCalls) {
        event(send, "response.output_text.delta", { item_id: itemId(context), output_index: 0, content_index: 0, delta, logprobs: [] });
        return;
      }
      const call = callIndexAt(choice, position);
      if (call > 0 && choice.toolCalls[call]?.firstToken === position) {
        callDone(send, context, call - 1);
        event(send, "response.output_item.added", { output_index: call, item: items(context, false)[call] });
      }
      event(send, "response.function_call_arguments.delta", { item_id: itemId(context, call), output_index: call, delta });
    },
    close(send, context) {
      const choice = choiceOf(context);
      if (choice.toolCalls) callDone(send, context, choice.toolCalls.length - 1);
      else {
        const text = choice.tokens.join("");
        event(send, "response.output_text.done", { item_id: itemId(context), output_index: 0, content_index: 0, text, logprobs: [] });
        event(send, "response.content_part.done", { item_id: itemId(context), output_index: 0, content_index: 0, part: { type: "output_text", text, annotations: [] } });
        event(send, "response.output_item.done", { output_index: 0, item: items(context, true)[0] });
      }
      const final = response(context, "done");
      event(send, final.status === "incomplete" ? "response.incomplete" : "response.completed", { response: final });
    },
    whole(context) {
      return response(context, "done");
    },
  };
}
