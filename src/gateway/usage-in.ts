export interface ReportedUsage {
  readonly promptTokens: number;
  readonly completionTokens: number;
}

const promptPattern = /"prompt_tokens"\s*:\s*(\d+)/;
const completionPattern = /"completion_tokens"\s*:\s*(\d+)/;

/** The usage numbers in a piece of an engine's JSON answer, when it has them. */
export function usageIn(text: string): ReportedUsage | undefined {
  const prompt = promptPattern.exec(text);
  if (!prompt) return undefined;
  const completion = completionPattern.exec(text);
  return { promptTokens: Number(prompt[1]), completionTokens: completion ? Number(completion[1]) : 0 };
}
