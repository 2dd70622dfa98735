import { z } from "zod";

/**
 * What the translations read of a chat completion and its stream's chunks:
 * loosely, as engines write them (each adds fields of its own, and some
 * send null where others leave a field out).
 */
const toolCallSchema = z.looseObject({
  index: z.number().int().nullish(),
  id: z.string().nullish(),
  function: z.looseObject({ name: z.string().nullish(), arguments: z.string().nullish() }).nullish(),
});

export const chatUsageSchema = z.looseObject({
  prompt_tokens: z.number().nullish(),
  completion_tokens: z.number().nullish(),
  prompt_tokens_details: z.looseObject({ cached_tokens: z.number().nullish() }).nullish(),
});
export type ChatUsage = z.infer<typeof chatUsageSchema>;

const choiceCommon = {
  index: z.number().int().nullish(),
  finish_reason: z.string().nullish(),
  // vLLM names the stop string that ended the answer here (llama-server and others do not).
  stop_reason: z.union([z.string(), z.number()]).nullish(),
};

export const chatCompletionSchema = z.looseObject({
  id: z.string().nullish(),
  model: z.string().nullish(),
  created: z.number().nullish(),
  choices: z.array(
    z.looseObject({
      ...choiceCommon,
      message: z.looseObject({ content: z.string().nullish(), tool_calls: z.array(toolCallSchema).nullish() }).nullish(),
    }),
  ),
  usage: chatUsageSchema.nullish(),
});
export type ChatCompletion = z.infer<typeof chatCompletionSchema>;

export const chatChunkSchema = z.looseObject({
  id: z.string().nullish(),
  model: z.string().nullish(),
  created: z.number().nullish(),
  choices: z
    .array(
      z.looseObject({
        ...choiceCommon,
        delta: z.looseObject({ content: z.string().nullish(), tool_calls: z.array(toolCallSchema).nullish() }).nullish(),
      }),
    )
    .nullish(),
  usage: chatUsageSchema.nullish(),
  // A gateway's own event for a stream cut short (see ProxiedAnswer), or an engine's error mid-stream.
  error: z.looseObject({ message: z.string().nullish(), type: z.string().nullish(), code: z.string().nullish() }).nullish(),
});
export type ChatChunk = z.infer<typeof chatChunkSchema>;

/**
 * One chat stream event's data, read loosely: "done" for `[DONE]`, the chunk,
 * or undefined for data no translation can use (a comment, another engine's
 * extension), which each translator passes over rather than failing the stream.
 */
export function readChatChunk(data: string): ChatChunk | "done" | undefined {
  if (data.trim() === "[DONE]") return "done";
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch {
    return undefined;
  }
  const parsed = chatChunkSchema.safeParse(json);
  return parsed.success ? parsed.data : undefined;
}

/** Why the answer ended, in chat completion terms, reduced to what the other APIs tell apart. */
export type Ending = "stop" | "stop_sequence" | "length" | "tool_calls" | "content_filter";

export function endingOf(finishReason: string | null | undefined, stopReason: string | number | null | undefined, stopSequences: readonly string[]): Ending {
  if (finishReason === "length") return "length";
  if (finishReason === "tool_calls" || finishReason === "function_call") return "tool_calls";
  if (finishReason === "content_filter") return "content_filter";
  if (typeof stopReason === "string" && stopSequences.includes(stopReason)) return "stop_sequence";
  return "stop";
}

/** A tool call's arguments as the object Anthropic's tool_use input is: a call whose arguments are not a JSON object keeps them whole under `arguments`. */
export function argumentsObject(text: string): Record<string, unknown> {
  if (text.trim() === "") return {};
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value === "object" && value !== null && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // Kept as written below.
  }
  return { arguments: text };
}
