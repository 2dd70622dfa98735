export interface ReportedUsage {
  readonly promptTokens: number;
  readonly completionTokens: number;
}

const promptPattern = /"prompt_tokens"\s*:\s*(\d+)/;
const completionPattern = /"completion_tokens"\s*:\s*(\d+)/;
/** The Responses API's names for the same counts. */
const inputPattern = /"input_tokens"\s*:\s*(\d+)/;
const outputPattern = /"output_tokens"\s*:\s*(\d+)/;

/** The usage numbers in a piece of an engine's JSON answer, when it has them. */
export function usageIn(text: string): ReportedUsage | undefined {
  const prompt = promptPattern.exec(text);
  if (prompt) {
    const completion = completionPattern.exec(text);
    return { promptTokens: Number(prompt[1]), completionTokens: completion ? Number(completion[1]) : 0 };
  }
  const input = inputPattern.exec(text);
  if (!input) return undefined;
  const output = outputPattern.exec(text);
  return { promptTokens: Number(input[1]), completionTokens: output ? Number(output[1]) : 0 };
}

/**
 * The usage of an Anthropic stream so far, with one more event read: the
 * prompt's count comes in message_start, the answer's (growing) in
 * message_delta, and an event names only what it knows.
 */
export function anthropicUsageIn(text: string, before: ReportedUsage | undefined): ReportedUsage | undefined {
  const input = inputPattern.exec(text);
  const output = outputPattern.exec(text);
  if (!input && !output) return before;
  return { promptTokens: input ? Number(input[1]) : (before?.promptTokens ?? 0), completionTokens: output ? Number(output[1]) : (before?.completionTokens ?? 0) };
}
