import { describe, expect, it } from "vitest";
import { SseUsageFilter } from "./sse-usage-filter.js";
import { usageIn } from "./usage-in.js";

const event = (payload: unknown) => `data: ${JSON.stringify(payload)}\n\n`;
const content = event({ id: "x", choices: [{ index: 0, delta: { content: "Hi" } }] });
const usage = event({ id: "x", choices: [], usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 } });
const done = "data: [DONE]\n\n";

function run(filter: SseUsageFilter, text: string, pieces: number): string {
  const bytes = Buffer.from(text);
  const size = Math.ceil(bytes.length / pieces);
  let output = "";
  for (let start = 0; start < bytes.length; start += size) output += filter.push(bytes.subarray(start, start + size));
  return output + filter.end();
}

describe("SseUsageFilter", () => {
  it("drops the usage event the gateway asked for, and keeps its numbers", () => {
    const filter = new SseUsageFilter(true);
    expect(run(filter, content + usage + done, 1)).toBe(content + done);
    expect(filter.usage).toEqual({ promptTokens: 12, completionTokens: 7 });
    expect(filter.done).toBe(true);
  });

  it("keeps the usage event for a client that asked for it", () => {
    const filter = new SseUsageFilter(false);
    expect(run(filter, content + usage + done, 1)).toBe(content + usage + done);
    expect(filter.usage).toEqual({ promptTokens: 12, completionTokens: 7 });
  });

  it("reads events split anywhere across chunks, multi-byte characters included", () => {
    const accented = event({ id: "x", choices: [{ index: 0, delta: { content: "héllo wörld ✓" } }] });
    for (const pieces of [2, 3, 7, 50]) {
      const filter = new SseUsageFilter(true);
      expect(run(filter, accented + usage + done, pieces)).toBe(accented + done);
      expect(filter.usage?.completionTokens).toBe(7);
    }
  });

  it("passes on each event as it comes from a server that ends its lines with CRLF, and drops its usage event", () => {
    const crlf = (text: string) => text.replace(/\n/g, "\r\n");
    const filter = new SseUsageFilter(true);
    // The first event leaves with its own chunk: nothing waits for the end of the stream.
    expect(filter.push(Buffer.from(crlf(content)))).toBe(crlf(content));
    expect(filter.push(Buffer.from(crlf(usage + done)))).toBe(crlf(done));
    expect(filter.usage).toEqual({ promptTokens: 12, completionTokens: 7 });
    expect(filter.done).toBe(true);
  });

  it("takes the Responses API's last event, with its usage, for the end of its stream", () => {
    const filter = new SseUsageFilter(false);
    const created = 'event: response.created\ndata: {"type":"response.created","response":{"usage":null}}\n\n';
    const completed = 'event: response.completed\ndata: {"type":"response.completed","response":{"usage":{"input_tokens":9,"output_tokens":4,"total_tokens":13}}}\n\n';
    expect(filter.push(Buffer.from(created))).toBe(created);
    expect(filter.done).toBe(false);
    expect(filter.push(Buffer.from(completed))).toBe(completed);
    expect(filter.done).toBe(true);
    expect(filter.usage).toEqual({ promptTokens: 9, completionTokens: 4 });
  });

  it("tells a stream that ended without [DONE]", () => {
    const filter = new SseUsageFilter(true);
    run(filter, content, 1);
    expect(filter.done).toBe(false);
  });
});

describe("usageIn", () => {
  it("reads usage from a JSON answer's tail, and nothing from one without", () => {
    expect(usageIn('..."usage":{"prompt_tokens":3,"total_tokens":3}}')).toEqual({ promptTokens: 3, completionTokens: 0 });
    expect(usageIn('{"choices":[]}')).toBeUndefined();
  });

  it("reads an Anthropic stream's usage from message_start and message_delta, and ends at message_stop", () => {
    const named = (type: string, payload: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...payload })}\n\n`;
    const stream =
      named("message_start", { message: { id: "msg_1", usage: { input_tokens: 31, output_tokens: 0 } } }) +
      named("content_block_delta", { index: 0, delta: { type: "text_delta", text: "Hi" } }) +
      named("message_delta", { delta: { stop_reason: "end_turn" }, usage: { output_tokens: 9 } });
    for (const pieces of [1, 5]) {
      const filter = new SseUsageFilter(false, "anthropic");
      expect(run(filter, stream, pieces)).toBe(stream);
      expect(filter.usage).toEqual({ promptTokens: 31, completionTokens: 9 });
      // Without message_stop the stream was cut.
      expect(filter.done).toBe(false);
      filter.push(Buffer.from(named("message_stop", {})));
      expect(filter.done).toBe(true);
    }
  });
});
