export type FinishReason = "stop" | "length" | "tool_calls";

/** How a generation ended, as the engine saw it. */
export interface GenerationEnd {
  /** The model produced an end-of-generation token. */
  readonly endOfGeneration: boolean;
  /** A stop string matched. */
  readonly stopMatched: boolean;
  /** The answer is one or more tool calls. */
  readonly toolCalls: boolean;
}

/**
 * OpenAI's and llama-server's finish_reason: "tool_calls" for a call, "stop"
 * when the model ended its answer or a stop string did, "length" otherwise
 * (max_tokens or the slot's context ran out), which clients read as a cut.
 */
export function finishReason(end: GenerationEnd): FinishReason {
  if (end.toolCalls) return "tool_calls";
  if (end.endOfGeneration || end.stopMatched) return "stop";
  return "length";
}
