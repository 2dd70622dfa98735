import { chatCompletionSchema, type ChatUsage } from "../chat-answer.js";
import type { ResponsesRequest } from "./responses-request.js";

export interface ResponsesUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

export function responsesUsage(usage: ChatUsage | null | undefined): ResponsesUsage {
  const input = usage?.prompt_tokens ?? 0;
  const output = usage?.completion_tokens ?? 0;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: usage?.prompt_tokens_details?.cached_tokens ?? 0 },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: input + output,
  };
}

export type OutputItem =
  | { type: "message"; id: string; status: "completed" | "in_progress" | "incomplete"; role: "assistant"; content: OutputText[] }
  | { type: "function_call"; id: string; call_id: string; name: string; arguments: string; status: "completed" | "in_progress" };

export interface OutputText {
  type: "output_text";
  text: string;
  annotations: never[];
  logprobs: never[];
}

export function outputText(text: string): OutputText {
  return { type: "output_text", text, annotations: [], logprobs: [] };
}

/** What a response object says beyond its output: the request's settings echoed, as OpenAI's API does. */
export interface ResponseFacts {
  readonly chatId: string | null | undefined;
  readonly created: number | null | undefined;
  readonly model: string;
  readonly status: "in_progress" | "completed" | "incomplete";
  readonly output: OutputItem[];
  readonly usage: ResponsesUsage | null;
}

export function responseId(chatId: string | null | undefined): string {
  return `resp_${chatId ?? "llmgw"}`;
}

/** The response object, the same in an answer and in a stream's response.created and response.completed. */
export function responseObject(request: ResponsesRequest, facts: ResponseFacts): Record<string, unknown> {
  const text = facts.output.flatMap((item) => (item.type === "message" ? item.content.map((part) => part.text) : [])).join("");
  return {
    id: responseId(facts.chatId),
    object: "response",
    created_at: facts.created ?? Math.floor(Date.now() / 1000),
    status: facts.status,
    error: null,
    incomplete_details: facts.status === "incomplete" ? { reason: "max_output_tokens" } : null,
    instructions: request.instructions ?? null,
    max_output_tokens: request.max_output_tokens ?? null,
    model: facts.model,
    output: facts.output,
    // Not in OpenAI's wire shape (its SDKs add it): clients reading the JSON themselves look for it all the same.
    output_text: text,
    parallel_tool_calls: request.parallel_tool_calls ?? true,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    store: false,
    temperature: request.temperature ?? null,
    text: { format: request.text?.format ?? { type: "text" } },
    tool_choice: request.tool_choice ?? "auto",
    tools: request.tools ?? [],
    top_p: request.top_p ?? null,
    truncation: "disabled",
    usage: facts.usage,
    user: request.user ?? null,
    metadata: {},
  };
}

/**
 * A chat completion as a Responses API response: its text as one message
 * item, each tool call as a function_call item, `incomplete` when it ran
 * out of max_output_tokens. Pure.
 */
export function chatToResponse(text: string, request: ResponsesRequest): Record<string, unknown> {
  const chat = chatCompletionSchema.parse(JSON.parse(text));
  const choice = chat.choices[0];
  const output: OutputItem[] = [];
  const said = choice?.message?.content;
  if (typeof said === "string" && said.length > 0) output.push({ type: "message", id: `msg_${chat.id ?? "llmgw"}`, status: "completed", role: "assistant", content: [outputText(said)] });
  for (const [index, call] of (choice?.message?.tool_calls ?? []).entries()) {
    const callId = call.id ?? `call_${chat.id ?? "llmgw"}_${index}`;
    output.push({ type: "function_call", id: `fc_${callId}`, call_id: callId, name: call.function?.name ?? "", arguments: call.function?.arguments ?? "", status: "completed" });
  }
  const status = choice?.finish_reason === "length" ? "incomplete" : "completed";
  return responseObject(request, { chatId: chat.id, created: chat.created, model: chat.model ?? request.model, status, output, usage: responsesUsage(chat.usage) });
}
