import fc from "fast-check";

/** A run of an answer as an engine streams it: text in pieces, or one tool call with its arguments in pieces. */
export type Segment = { kind: "text"; pieces: string[] } | { kind: "tool"; id: string; name: string; pieces: string[] };

export interface ChatStreamCase {
  readonly segments: Segment[];
  readonly finishReason: "stop" | "length" | "tool_calls";
  readonly usage: { prompt_tokens: number; completion_tokens: number };
  /** Where the stream's text is cut between writes, as fractions of its length. */
  readonly cuts: number[];
}

const piece = fc.string({ minLength: 1, maxLength: 8, unit: fc.constantFrom("a", "é", " ", "\n", '"', "{", "}", "🙂", "x", ":") });

export const chatStreamCase: fc.Arbitrary<ChatStreamCase> = fc.record({
  segments: fc.array(
    fc.oneof(
      fc.record({ kind: fc.constant("text" as const), pieces: fc.array(piece, { minLength: 1, maxLength: 5 }) }),
      fc.record({ kind: fc.constant("tool" as const), id: fc.stringMatching(/^call_[a-z0-9]{4}$/), name: fc.constantFrom("get_weather", "search"), pieces: fc.array(piece, { maxLength: 5 }) }),
    ),
    { maxLength: 5 },
  ),
  finishReason: fc.constantFrom("stop" as const, "length" as const, "tool_calls" as const),
  usage: fc.record({ prompt_tokens: fc.nat(500), completion_tokens: fc.nat(500) }),
  cuts: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 6 }),
});

/** The case as an engine's chat completion stream: its events, a finish, the usage event, [DONE]. */
export function chatStreamText(test: ChatStreamCase): string {
  const chunks: unknown[] = [];
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({ id: "chatcmpl-1", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta, finish_reason: finish }] });
  chunks.push(chunk({ role: "assistant", content: "" }));
  let toolIndex = 0;
  for (const segment of test.segments) {
    if (segment.kind === "text") for (const text of segment.pieces) chunks.push(chunk({ content: text }));
    else {
      chunks.push(chunk({ tool_calls: [{ index: toolIndex, id: segment.id, type: "function", function: { name: segment.name, arguments: "" } }] }));
      for (const text of segment.pieces) chunks.push(chunk({ tool_calls: [{ index: toolIndex, function: { arguments: text } }] }));
      toolIndex += 1;
    }
  }
  chunks.push(chunk({}, test.finishReason));
  chunks.push({ id: "chatcmpl-1", object: "chat.completion.chunk", created: 1, model: "m", choices: [], usage: { ...test.usage, total_tokens: test.usage.prompt_tokens + test.usage.completion_tokens } });
  return `${chunks.map((value) => `data: ${JSON.stringify(value)}\n\n`).join("")}data: [DONE]\n\n`;
}

/** The stream's bytes cut where the case says, so events (and characters) are split between writes. */
export function cutInto(text: string, cuts: readonly number[]): Buffer[] {
  const bytes = Buffer.from(text);
  const points = [...new Set(cuts.map((cut) => Math.floor(cut * bytes.length)))].sort((a, b) => a - b);
  const parts: Buffer[] = [];
  let start = 0;
  for (const point of [...points, bytes.length]) {
    if (point > start) parts.push(bytes.subarray(start, point));
    start = Math.max(start, point);
  }
  return parts;
}

/** The events of an Anthropic or Responses stream: each event's name and parsed data. */
export function readEvents(text: string): { event: string; data: Record<string, unknown> }[] {
  return text
    .split("\n\n")
    .filter((block) => block.trim() !== "")
    .map((block) => {
      const lines = block.split("\n");
      const event = lines.find((line) => line.startsWith("event: "))?.slice(7) ?? "";
      const data = JSON.parse(lines.find((line) => line.startsWith("data: "))?.slice(6) ?? "{}") as Record<string, unknown>;
      return { event, data };
    });
}
