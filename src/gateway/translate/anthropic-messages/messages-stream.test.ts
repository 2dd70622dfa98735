import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { RecordingResponse } from "../../testing/recording-response.js";
import { chatStreamCase, chatStreamText, cutInto, readEvents, type Segment } from "../../testing/chat-stream-arbitrary.js";
import { TranslatingResponse } from "../translating-response.js";
import { messagesTranslator } from "./messages-translator.js";

/** The stream through a TranslatingResponse as the gateway writes it: its head, then its bytes in the given writes. */
function translate(parts: readonly Buffer[], stopSequences: string[] = [], inputTokens = 0): RecordingResponse {
  const client = new RecordingResponse();
  const response = new TranslatingResponse(client, messagesTranslator({ model: "asked", stopSequences }, inputTokens));
  response.writeHead(200, ["content-type", "text/event-stream", "x-llmgw-model", "m"]);
  for (const part of parts.slice(0, -1)) response.write(part);
  response.end(parts.at(-1));
  return client;
}

/** Consecutive runs of text are one block, as the stream writes them. */
function expectedBlocks(segments: readonly Segment[]): { type: string; text: string; name?: string; id?: string }[] {
  const blocks: { type: string; text: string; name?: string; id?: string }[] = [];
  for (const segment of segments) {
    const text = segment.pieces.join("");
    const last = blocks.at(-1);
    if (segment.kind === "text" && last?.type === "text") last.text += text;
    else if (segment.kind === "text") blocks.push({ type: "text", text });
    else blocks.push({ type: "tool_use", text, name: segment.name, id: segment.id });
  }
  return blocks;
}

describe("a chat completion stream as Anthropic's events", () => {
  it("gives a well-formed event sequence for any chat stream, cut anywhere, with the text and arguments whole", () => {
    fc.assert(
      fc.property(chatStreamCase, (test) => {
        const client = translate(cutInto(chatStreamText(test), test.cuts));
        expect(client.headers["content-type"]).toBe("text/event-stream");
        const events = readEvents(client.body);
        for (const { event, data } of events) expect(data.type).toBe(event);
        expect(events[0]?.event).toBe("message_start");
        expect(events[1]?.event).toBe("ping");
        expect(events.slice(-2).map((entry) => entry.event)).toEqual(["message_delta", "message_stop"]);
        const blocks: { type: string; text: string; name?: string; id?: string }[] = [];
        let open: number | undefined;
        for (const { event, data } of events.slice(2, -2)) {
          if (event === "content_block_start") {
            expect(open).toBeUndefined();
            expect(data.index).toBe(blocks.length);
            const block = data.content_block as { type: string; name?: string; id?: string };
            blocks.push({ type: block.type, text: "", ...(block.type === "tool_use" ? { name: block.name as string, id: block.id as string } : {}) });
            open = data.index as number;
          } else if (event === "content_block_delta") {
            expect(data.index).toBe(open);
            const delta = data.delta as { type: string; text?: string; partial_json?: string };
            const block = blocks[open as number] as { type: string; text: string };
            expect(delta.type).toBe(block.type === "text" ? "text_delta" : "input_json_delta");
            block.text += delta.text ?? delta.partial_json ?? "";
          } else {
            expect(event).toBe("content_block_stop");
            expect(data.index).toBe(open);
            open = undefined;
          }
        }
        expect(open).toBeUndefined();
        expect(blocks).toEqual(expectedBlocks(test.segments));
        const final = events.at(-2)?.data as { delta: { stop_reason: string }; usage: { input_tokens: number; output_tokens: number } };
        expect(final.delta.stop_reason).toBe({ stop: "end_turn", length: "max_tokens", tool_calls: "tool_use" }[test.finishReason]);
        expect(final.usage).toEqual({ input_tokens: test.usage.prompt_tokens, output_tokens: test.usage.completion_tokens });
      }),
      { numRuns: 200 },
    );
  });

  it("names the stop sequence that ended the answer when the engine says which (vLLM's stop_reason)", () => {
    const chunks = [
      { id: "c", model: "m", choices: [{ index: 0, delta: { content: "one two" }, finish_reason: null }] },
      { id: "c", model: "m", choices: [{ index: 0, delta: {}, finish_reason: "stop", stop_reason: "THREE" }] },
    ];
    const text = `${chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`).join("")}data: [DONE]\n\n`;
    const events = readEvents(translate([Buffer.from(text)], ["THREE"]).body);
    expect(events.at(-2)?.data.delta).toEqual({ stop_reason: "stop_sequence", stop_sequence: "THREE" });
  });

  it("ends a stream the engine broke off with Anthropic's error event, and sends nothing after it", () => {
    const chunk = { id: "c", model: "m", choices: [{ index: 0, delta: { content: "Hel" }, finish_reason: null }] };
    const cut = { error: { message: "the engine's stream broke off", type: "server_error", param: null, code: "upstream_failed" } };
    const events = readEvents(translate([Buffer.from(`data: ${JSON.stringify(chunk)}\n\n`), Buffer.from(`data: ${JSON.stringify(cut)}\n\n`)]).body);
    expect(events.at(-1)).toEqual({ event: "error", data: { type: "error", error: { type: "api_error", message: "upstream_failed: the engine's stream broke off" } } });
    expect(events.some((entry) => entry.event === "message_stop")).toBe(false);
  });

  it("opens with the prompt's tokens as the gateway counted them, and streams a call's arguments as the engine's pieces arrive", () => {
    const call = (delta: Record<string, unknown>) => Buffer.from(`data: ${JSON.stringify({ id: "c", model: "m", choices: [{ index: 0, delta: { tool_calls: [{ index: 0, ...delta }] }, finish_reason: null }] })}\n\n`);
    const client = new RecordingResponse();
    const response = new TranslatingResponse(client, messagesTranslator({ model: "asked", stopSequences: [] }, 42));
    response.writeHead(200, ["content-type", "text/event-stream"]);
    response.write(call({ id: "call_1", type: "function", function: { name: "get_time", arguments: "" } }));
    expect(readEvents(client.body)[0]).toMatchObject({ event: "message_start", data: { message: { usage: { input_tokens: 42 } } } });
    const pieces = ['{"zo', 'ne": "Eu', 'rope/Oslo"}'];
    for (const [index, piece] of pieces.entries()) {
      response.write(call({ function: { arguments: piece } }));
      // Each piece leaves as its own input_json_delta before the next arrives, not gathered to the call's end.
      const deltas = readEvents(client.body).filter((entry) => entry.event === "content_block_delta");
      expect(deltas.map((entry) => (entry.data as { delta: { partial_json: string } }).delta.partial_json)).toEqual(pieces.slice(0, index + 1));
    }
  });
});
