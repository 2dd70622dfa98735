import { argumentsObject, chatCompletionSchema, endingOf, type ChatUsage, type Ending } from "../chat-answer.js";

export type AnthropicStopReason = "end_turn" | "max_tokens" | "stop_sequence" | "tool_use" | "refusal";

export function stopReasonOf(ending: Ending): AnthropicStopReason {
  switch (ending) {
    case "length":
      return "max_tokens";
    case "tool_calls":
      return "tool_use";
    case "stop_sequence":
      return "stop_sequence";
    case "content_filter":
      return "refusal";
    default:
      return "end_turn";
  }
}

export interface AnthropicUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens?: number;
}

export function anthropicUsage(usage: ChatUsage | null | undefined): AnthropicUsage {
  const cached = usage?.prompt_tokens_details?.cached_tokens;
  return {
    input_tokens: usage?.prompt_tokens ?? 0,
    output_tokens: usage?.completion_tokens ?? 0,
    ...(typeof cached === "number" && cached > 0 ? { cache_read_input_tokens: cached } : {}),
  };
}

export type AnthropicBlock = { type: "text"; text: string } | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> };

/** An Anthropic message's id from the engine's completion id: the same answer is findable in both logs. */
export function messageId(chatId: string | null | undefined): string {
  return `msg_${chatId ?? "llmgw"}`;
}

/**
 * A chat completion as Anthropic's message object: its text and tool calls
 * as content blocks, its finish reason as stop_reason, its usage in
 * Anthropic's terms. The first choice is the answer (Anthropic's API has
 * no `n`). Pure.
 */
export function chatToMessage(text: string, stopSequences: readonly string[], requestedModel: string): Record<string, unknown> {
  const chat = chatCompletionSchema.parse(JSON.parse(text));
  const choice = chat.choices[0];
  const content: AnthropicBlock[] = [];
  const said = choice?.message?.content;
  if (typeof said === "string" && said.length > 0) content.push({ type: "text", text: said });
  for (const [index, call] of (choice?.message?.tool_calls ?? []).entries()) {
    content.push({ type: "tool_use", id: call.id ?? `toolu_${chat.id ?? "llmgw"}_${index}`, name: call.function?.name ?? "", input: argumentsObject(call.function?.arguments ?? "") });
  }
  const ending = endingOf(choice?.finish_reason, choice?.stop_reason, stopSequences);
  return {
    id: messageId(chat.id),
    type: "message",
    role: "assistant",
    model: chat.model ?? requestedModel,
    content,
    stop_reason: stopReasonOf(ending),
    stop_sequence: ending === "stop_sequence" ? choice?.stop_reason : null,
    usage: anthropicUsage(chat.usage),
  };
}
