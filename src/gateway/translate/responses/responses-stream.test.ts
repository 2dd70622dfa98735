import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { RecordingResponse } from "../../testing/recording-response.js";
import { chatStreamCase, chatStreamText, cutInto, readEvents, type Segment } from "../../testing/chat-stream-arbitrary.js";
import { TranslatingResponse } from "../translating-response.js";
import { responsesToChat } from "./responses-request.js";
import { responsesTranslator } from "./responses-translator.js";

const request = responsesToChat(Buffer.from(JSON.stringify({ model: "small", input: "Hi", stream: true }))).request;

function translate(parts: readonly Buffer[]): RecordingResponse {
  const client = new RecordingResponse();
  const response = new TranslatingResponse(client, responsesTranslator(request));
  response.writeHead(200, { "content-type": "text/event-stream" });
  for (const part of parts) response.write(part);
  response.end();
  return client;
}

/** Output items as the case's segments make them: consecutive text runs are one message. */
function expectedOutput(segments: readonly Segment[]): { type: string; text: string; name?: string; call_id?: string }[] {
  const items: { type: string; text: string; name?: string; call_id?: string }[] = [];
  for (const segment of segments) {
    const text = segment.pieces.join("");
    const last = items.at(-1);
    if (segment.kind === "text" && last?.type === "message") last.text += text;
    else if (segment.kind === "text") items.push({ type: "message", text });
    else items.push({ type: "function_call", text, name: segment.name, call_id: segment.id });
  }
  return items;
}

describe("a chat completion stream as the Responses API's events", () => {
  it("gives numbered, paired events for any chat stream, the completed response holding the whole output and usage", () => {
    fc.assert(
      fc.property(chatStreamCase, (test) => {
        const events = readEvents(translate(cutInto(chatStreamText(test), test.cuts)).body);
        events.forEach(({ event, data }, index) => {
          expect(data.type).toBe(event);
          expect(data.sequence_number).toBe(index);
        });
        expect(events.slice(0, 2).map((entry) => entry.event)).toEqual(["response.created", "response.in_progress"]);
        const last = events.at(-1);
        expect(last?.event).toBe(test.finishReason === "length" ? "response.incomplete" : "response.completed");
        const added: number[] = [];
        const done: number[] = [];
        for (const { event, data } of events) {
          if (event === "response.output_item.added") added.push(data.output_index as number);
          if (event === "response.output_item.done") {
            expect(added.at(-1)).toBe(data.output_index);
            done.push(data.output_index as number);
          }
        }
        expect(added).toEqual(done);
        const response = last?.data.response as { output: { type: string; content?: { text: string }[]; arguments?: string; name?: string; call_id?: string }[]; usage: Record<string, number> };
        const output = response.output.map((item) =>
          item.type === "message" ? { type: "message", text: item.content?.map((part) => part.text).join("") ?? "" } : { type: item.type, text: item.arguments ?? "", name: item.name, call_id: item.call_id },
        );
        expect(output).toEqual(expectedOutput(test.segments));
        expect(added).toEqual(output.map((_, index) => index));
        const deltas = events.filter((entry) => entry.event === "response.output_text.delta" || entry.event === "response.function_call_arguments.delta").map((entry) => entry.data.delta as string);
        expect(deltas.join("")).toBe(test.segments.map((segment) => segment.pieces.join("")).join(""));
        expect(response.usage).toMatchObject({ input_tokens: test.usage.prompt_tokens, output_tokens: test.usage.completion_tokens, total_tokens: test.usage.prompt_tokens + test.usage.completion_tokens });
      }),
      { numRuns: 200 },
    );
  });
});
