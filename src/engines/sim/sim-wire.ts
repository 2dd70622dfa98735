import type { ChatCompletionRequest, ResponsesRequest } from "./openai-request-schemas.js";
import { simulatedLogprobs, tokenBytes, unsupportedSchemaKeyword, type SimAnswerShape, type SimChoice, type SimTokenLogprob } from "./sim-choices.js";

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
  readonly stream: boolean;
  /** Built once a slot is free, so a queued request holds no answer in memory. */
  readonly choices: () => SimChoice[];
}

export interface DecodeContext {
  readonly id: string;
  readonly created: number;
  readonly choices: readonly SimChoice[];
  readonly usage: { readonly prompt_tokens: number; readonly completion_tokens: number; readonly total_tokens: number };
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

/**
 * What the chat request asks the answer to be: a call of the named tool, or
 * of the first when tool_choice is "required"; JSON for response_format;
 * text otherwise ("auto" answers in text: the simulation never decides on
 * its own to call a tool). A refusal names the field that cannot be served.
 */
export function chatAnswerShape(body: Pick<ChatCompletionRequest, "tools" | "tool_choice" | "response_format">): SimAnswerShape | { refusal: string; param: string } {
  const tools = (body.tools ?? []).filter((tool) => tool.type === "function").map((tool) => ({ name: tool.function.name, parameters: tool.function.parameters }));
  const choice = body.tool_choice;
  if (choice !== undefined && choice !== null && choice !== "none" && choice !== "auto") {
    if (tools.length === 0) return { refusal: `tool_choice ${JSON.stringify(choice)} needs at least one function in tools`, param: "tool_choice" };
    const wanted = choice === "required" ? tools[0] : tools.find((tool) => tool.name === choice.function.name);
    if (wanted === undefined) {
      const name = typeof choice === "object" ? choice.function.name : "";
      return { refusal: `tool_choice names the function ${JSON.stringify(name)}, which is not in tools (${tools.map((tool) => tool.name).join(", ")})`, param: "tool_choice" };
    }
    const keyword = unsupportedSchemaKeyword(wanted.parameters);
    if (keyword !== undefined) return { refusal: `the simulated engine cannot generate arguments for a parameters schema using ${keyword}; use a schema of types, properties, items and enum`, param: "tools" };
    return { kind: "tool", tool: wanted };
  }
  const format = body.response_format;
  if (format?.type === "json_object") return { kind: "json" };
  if (format?.type === "json_schema") {
    const schema = format.json_schema?.schema;
    if (schema === undefined) return { refusal: "response_format json_schema needs json_schema.schema", param: "response_format" };
    const keyword = unsupportedSchemaKeyword(schema);
    if (keyword !== undefined) return { refusal: `the simulated engine cannot generate JSON for a schema using ${keyword}; use a schema of types, properties, items and enum`, param: "response_format" };
    return { kind: "json", schema };
  }
  return { kind: "text" };
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

/** The chat completions API (`chat.completion`, `chat.completion.chunk`). */
export function chatWire(model: string, includeUsage: boolean, topLogprobs: number | undefined, seed: number): DecodeWire {
  let logprobs: (SimTokenLogprob[] | undefined)[] = [];
  const chunk = (send: SendEvent, context: DecodeContext, choices: unknown[]) => send({ id: context.id, object: "chat.completion.chunk", created: context.created, model, choices });
  return {
    done: true,
    open(send, context) {
      logprobs = logprobsOf(context, topLogprobs, seed);
      for (const [index, choice] of context.choices.entries()) {
        const call = choice.toolCall;
        const delta = call
          ? { role: "assistant", content: null, tool_calls: [{ index: 0, id: call.id, type: "function", function: { name: call.name, arguments: "" } }] }
          : { role: "assistant", content: "" };
        chunk(send, context, [{ index, delta, logprobs: null, finish_reason: null }]);
      }
    },
    token(send, context, index, position) {
      const choice = context.choices[index] as SimChoice;
      const token = choice.tokens[position] ?? "";
      const entry = logprobs[index]?.[position];
      const delta = choice.toolCall ? { tool_calls: [{ index: 0, function: { arguments: token } }] } : { content: token };
      chunk(send, context, [{ index, delta, logprobs: entry ? { content: [chatLogprobsEntry(entry)] } : null, finish_reason: null }]);
    },
    close(send, context) {
      closeChoices(send, context, "chat.completion.chunk", model, includeUsage, { delta: {} });
    },
    whole(context) {
      logprobs = logprobsOf(context, topLogprobs, seed);
      return wholeAnswer(context, "chat.completion", model, (choice, index) => {
        const text = choice.tokens.join("");
        const call = choice.toolCall;
        const message = call
          ? { role: "assistant", content: null, tool_calls: [{ id: call.id, type: "function", function: { name: call.name, arguments: text } }] }
          : { role: "assistant", content: text };
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

/** A Responses API request's tools, tool_choice and text.format in the chat API's terms, so one rule decides the answer's shape. */
export function responsesAnswerShape(body: Pick<ResponsesRequest, "tools" | "tool_choice" | "text">): ReturnType<typeof chatAnswerShape> {
  const tools = (body.tools ?? []).flatMap((tool) => (tool.type === "function" && tool.name !== undefined ? [{ type: "function", function: { name: tool.name, parameters: tool.parameters } }] : []));
  const choice = body.tool_choice;
  const format = body.text?.format;
  const shape = chatAnswerShape({
    tools,
    tool_choice: typeof choice === "object" && choice !== null ? { type: "function", function: { name: choice.name } } : choice,
    response_format: format === undefined ? undefined : { type: format.type, json_schema: { schema: format.schema } },
  });
  // The Responses API names the fields otherwise.
  if ("refusal" in shape) return { refusal: shape.refusal, param: shape.param === "response_format" ? "text.format" : shape.param };
  return shape;
}

/** OpenAI's Responses API (`response`, and its named stream events), one output item per request. */
export function responsesWire(model: string, request: { readonly instructions: string | null; readonly maxOutputTokens: number | null }): DecodeWire {
  let sequence = 0;
  const itemId = (context: DecodeContext) => `${context.choices[0]?.toolCall ? "fc" : "msg"}_${context.id}`;
  const event = (send: SendEvent, type: string, fields: Record<string, unknown>) => send({ type, sequence_number: sequence++, ...fields }, type);
  const item = (context: DecodeContext, done: boolean) => {
    const choice = context.choices[0] as SimChoice;
    const text = done ? choice.tokens.join("") : "";
    const status = done ? "completed" : "in_progress";
    const call = choice.toolCall;
    if (call) return { type: "function_call", id: itemId(context), call_id: call.id, name: call.name, arguments: text, status };
    return { type: "message", id: itemId(context), status, role: "assistant", content: done ? [{ type: "output_text", text, annotations: [], logprobs: [] }] : [] };
  };
  const response = (context: DecodeContext, state: "in_progress" | "done") => {
    const choice = context.choices[0] as SimChoice;
    const cut = choice.finishReason === "length";
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
      output: state === "done" ? [item(context, true)] : [],
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
              input_tokens_details: { cached_tokens: 0 },
              output_tokens: context.usage.completion_tokens,
              output_tokens_details: { reasoning_tokens: 0 },
              total_tokens: context.usage.total_tokens,
            }
          : null,
    };
  };
  return {
    done: false,
    open(send, context) {
      event(send, "response.created", { response: response(context, "in_progress") });
      event(send, "response.in_progress", { response: response(context, "in_progress") });
      event(send, "response.output_item.added", { output_index: 0, item: item(context, false) });
      if (!context.choices[0]?.toolCall) event(send, "response.content_part.added", { item_id: itemId(context), output_index: 0, content_index: 0, part: { type: "output_text", text: "", annotations: [] } });
    },
    token(send, context, _index, position) {
      const choice = context.choices[0] as SimChoice;
      const delta = choice.tokens[position] ?? "";
      if (choice.toolCall) event(send, "response.function_call_arguments.delta", { item_id: itemId(context), output_index: 0, delta });
      else event(send, "response.output_text.delta", { item_id: itemId(context), output_index: 0, content_index: 0, delta, logprobs: [] });
    },
    close(send, context) {
      const choice = context.choices[0] as SimChoice;
      const text = choice.tokens.join("");
      if (choice.toolCall) event(send, "response.function_call_arguments.done", { item_id: itemId(context), output_index: 0, arguments: text });
      else {
        event(send, "response.output_text.done", { item_id: itemId(context), output_index: 0, content_index: 0, text, logprobs: [] });
        event(send, "response.content_part.done", { item_id: itemId(context), output_index: 0, content_index: 0, part: { type: "output_text", text, annotations: [] } });
      }
      event(send, "response.output_item.done", { output_index: 0, item: item(context, true) });
      const final = response(context, "done");
      event(send, final.status === "incomplete" ? "response.incomplete" : "response.completed", { response: final });
    },
    whole(context) {
      return response(context, "done");
    },
  };
}
