import { describe, expect, it } from "vitest";
import { DomainError } from "../../../errors/domain-error.js";
import { responsesToChat } from "./responses-request.js";
import { chatToResponse } from "./responses-answer.js";
import { responsesTranslator } from "./responses-translator.js";

const body = (value: unknown) => Buffer.from(JSON.stringify(value));
const refusal = (value: unknown): DomainError => {
  try {
    responsesToChat(body(value));
  } catch (error) {
    if (error instanceof DomainError) return error;
    throw error;
  }
  throw new Error("not refused");
};

describe("a Responses API request as a chat completion", () => {
  it("takes a string input with instructions, and the output limit, sampling and streaming fields", () => {
    const { chat, stream } = responsesToChat(body({ model: "m", instructions: "Be brief.", input: "Hi", max_output_tokens: 20, temperature: 0.3, top_p: 0.8, user: "u", stream: true, store: false }));
    expect(stream).toBe(true);
    expect(chat).toEqual({
      model: "m",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "Hi" },
      ],
      max_tokens: 20,
      stream: true,
      stream_options: { include_usage: true },
      temperature: 0.3,
      top_p: 0.8,
      user: "u",
    });
  });

  it("turns items into turns: a function call joins the assistant's turn, its output is a tool message, not a user turn", () => {
    const { chat } = responsesToChat(
      body({
        model: "m",
        input: [
          { role: "developer", content: "Use tools." },
          { role: "user", content: [{ type: "input_text", text: "Weather?" }, { type: "input_image", image_url: "data:image/png;base64,AA", detail: "low" }] },
          { type: "reasoning", id: "rs_1", summary: [] },
          { type: "message", role: "assistant", content: [{ type: "output_text", text: "Checking." }] },
          { type: "function_call", call_id: "call_1", name: "get_weather", arguments: '{"city":"Oslo"}' },
          { type: "function_call", call_id: "call_2", name: "get_weather", arguments: '{"city":"Bergen"}' },
          { type: "function_call_output", call_id: "call_1", output: "Sunny" },
          { type: "function_call_output", call_id: "call_2", output: [{ type: "input_text", text: "Rain" }] },
        ],
        tools: [{ type: "function", name: "get_weather", parameters: { type: "object" }, strict: true }],
        tool_choice: { type: "function", name: "get_weather" },
        text: { format: { type: "json_schema", name: "w", schema: { type: "object" }, strict: true } },
      }),
    );
    expect(chat.messages).toEqual([
      { role: "system", content: "Use tools." },
      { role: "user", content: [{ type: "text", text: "Weather?" }, { type: "image_url", image_url: { url: "data:image/png;base64,AA", detail: "low" } }] },
      {
        role: "assistant",
        content: "Checking.",
        tool_calls: [
          { id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } },
          { id: "call_2", type: "function", function: { name: "get_weather", arguments: '{"city":"Bergen"}' } },
        ],
      },
      { role: "tool", tool_call_id: "call_1", content: "Sunny" },
      { role: "tool", tool_call_id: "call_2", content: "Rain" },
    ]);
    expect(chat.tools).toEqual([{ type: "function", function: { name: "get_weather", parameters: { type: "object" }, strict: true } }]);
    expect(chat.tool_choice).toEqual({ type: "function", function: { name: "get_weather" } });
    expect(chat.response_format).toEqual({ type: "json_schema", json_schema: { name: "w", schema: { type: "object" }, strict: true } });
    expect(responsesToChat(body({ model: "m", input: "x", text: { format: { type: "json_object" } }, tool_choice: "required" })).chat).toMatchObject({ response_format: { type: "json_object" }, tool_choice: "required" });
  });

  it("refuses what a gateway that keeps no responses, or an engine without the route, cannot do, naming the field", () => {
    const cases: [unknown, string][] = [
      [{ model: "m", input: "x", previous_response_id: "resp_1" }, "previous_response_id"],
      [{ model: "m", input: "x", conversation: "conv_1" }, "conversation"],
      [{ model: "m", input: "x", store: true }, "store"],
      [{ model: "m", input: "x", background: true }, "background"],
      [{ model: "m", input: "x", tools: [{ type: "web_search" }] }, "tools.0"],
      [{ model: "m", input: [{ type: "item_reference", id: "x" }] }, "input.0.type"],
      [{ model: "m", input: [{ type: "function_call", call_id: "c", name: "f" }] }, "input.0.arguments"],
      [{ model: "m", input: [{ role: "user", content: [{ type: "input_image", file_id: "file_1" }] }] }, "input.0.content.0.image_url"],
      [{ model: "m", input: [{ role: "assistant", content: [{ type: "input_image", image_url: "http://x" }] }] }, "input.0.content"],
      [{ model: "m", input: [{ type: "function_call_output", call_id: "c", output: [{ type: "input_image", image_url: "http://x" }] }] }, "input.0.output.0"],
      [{ model: "m", input: 3 }, "input"],
      [{ model: "m", input: "x", max_output_tokens: 0 }, "max_output_tokens"],
    ];
    for (const [value, where] of cases) {
      const error = refusal(value);
      expect({ where: error.details[0]?.where, code: error.code }).toEqual({ where, code: "invalid_input" });
    }
    expect(refusal({ model: "m", input: "x", previous_response_id: "resp_1" }).message).toContain("keeps no responses");
  });
});

describe("a chat completion as a Responses API response", () => {
  const request = responsesToChat(body({ model: "asked", input: "x", max_output_tokens: 9 })).request;

  it("gives a message item and function_call items, incomplete past max_output_tokens, with usage", () => {
    const chat = {
      id: "c1",
      created: 5,
      model: "m",
      choices: [{ finish_reason: "length", message: { content: "Hi", tool_calls: [{ id: "call_1", function: { name: "f", arguments: "{}" } }] } }],
      usage: { prompt_tokens: 3, completion_tokens: 9 },
    };
    expect(chatToResponse(JSON.stringify(chat), request)).toMatchObject({
      id: "resp_c1",
      object: "response",
      created_at: 5,
      status: "incomplete",
      incomplete_details: { reason: "max_output_tokens" },
      model: "m",
      max_output_tokens: 9,
      output: [
        { type: "message", id: "msg_c1", status: "completed", role: "assistant", content: [{ type: "output_text", text: "Hi", annotations: [] }] },
        { type: "function_call", id: "fc_call_1", call_id: "call_1", name: "f", arguments: "{}", status: "completed" },
      ],
      output_text: "Hi",
      usage: { input_tokens: 3, output_tokens: 9, total_tokens: 12, input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } },
    });
  });

  it("names the Responses API's fields in a limit refusal of the translated request", () => {
    const refused = JSON.stringify({ error: { message: "body max_tokens: 60 is more than the model's 50", type: "invalid_request_error", param: "max_tokens", code: "context_length_exceeded" } });
    expect(JSON.parse(responsesTranslator(request).error(400, refused))).toEqual({ error: { message: "body max_output_tokens: 60 is more than the model's 50", type: "invalid_request_error", param: "max_output_tokens", code: "context_length_exceeded" } });
  });
});
