import { describe, expect, it } from "vitest";
import { DomainError } from "../../../errors/domain-error.js";
import { messagesToChat } from "./messages-request.js";
import { chatToMessage } from "./messages-answer.js";
import { anthropicErrorFromOpenAI } from "./anthropic-error.js";

const body = (value: unknown) => Buffer.from(JSON.stringify(value));
const refusal = (value: unknown, counting = false): DomainError => {
  try {
    messagesToChat(body(value), counting);
  } catch (error) {
    if (error instanceof DomainError) return error;
    throw error;
  }
  throw new Error("not refused");
};

describe("an Anthropic Messages request as a chat completion", () => {
  it("puts the system prompt first, keeps the turns, and carries the sampling fields, stop sequences and user", () => {
    const { chat, stream } = messagesToChat(
      body({
        model: "m",
        max_tokens: 32,
        system: [{ type: "text", text: "Be brief." }, { type: "text", text: "Be kind.", cache_control: { type: "ephemeral" } }],
        messages: [
          { role: "user", content: "Hi" },
          { role: "assistant", content: [{ type: "thinking", thinking: "...", signature: "s" }, { type: "text", text: "Hello" }] },
          { role: "user", content: [{ type: "text", text: "Look:" }, { type: "image", source: { type: "base64", media_type: "image/png", data: "AAAA" } }] },
        ],
        stop_sequences: ["END"],
        temperature: 0.2,
        top_p: 0.9,
        top_k: 40,
        metadata: { user_id: "u-1" },
        stream: true,
      }),
    );
    expect(stream).toBe(true);
    expect(chat).toEqual({
      model: "m",
      max_tokens: 32,
      messages: [
        { role: "system", content: "Be brief.\n\nBe kind." },
        { role: "user", content: "Hi" },
        { role: "assistant", content: "Hello" },
        { role: "user", content: [{ type: "text", text: "Look:" }, { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } }] },
      ],
      stream: true,
      stream_options: { include_usage: true },
      stop: ["END"],
      temperature: 0.2,
      top_p: 0.9,
      top_k: 40,
      user: "u-1",
    });
  });

  it("turns tools, tool_use and tool_result into functions, tool calls and tool messages, and each tool_choice into chat's", () => {
    const tools = [{ name: "get_weather", description: "Weather", input_schema: { type: "object", properties: { city: { type: "string" } } } }];
    const messages = [
      { role: "user", content: "Weather in Oslo?" },
      { role: "assistant", content: [{ type: "text", text: "Checking." }, { type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Oslo" } }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: "Sunny" }] }, { type: "text", text: "And tomorrow?" }] },
      { role: "assistant", content: [{ type: "tool_use", id: "toolu_2", name: "get_weather", input: { city: "Oslo" } }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_2", content: "no forecast", is_error: true }] },
    ];
    const { chat } = messagesToChat(body({ model: "m", max_tokens: 8, tools, tool_choice: { type: "any", disable_parallel_tool_use: true }, messages }));
    expect(chat.tools).toEqual([{ type: "function", function: { name: "get_weather", description: "Weather", parameters: tools[0]?.input_schema } }]);
    expect(chat.tool_choice).toBe("required");
    expect(chat.parallel_tool_calls).toBe(false);
    expect(chat.messages).toEqual([
      { role: "user", content: "Weather in Oslo?" },
      { role: "assistant", content: "Checking.", tool_calls: [{ id: "toolu_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } }] },
      { role: "tool", tool_call_id: "toolu_1", content: "Sunny" },
      { role: "user", content: "And tomorrow?" },
      { role: "assistant", content: null, tool_calls: [{ id: "toolu_2", type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } }] },
      { role: "tool", tool_call_id: "toolu_2", content: "Error: no forecast" },
    ]);
    const choice = (toolChoice: unknown) => messagesToChat(body({ model: "m", max_tokens: 8, tools, tool_choice: toolChoice, messages: [{ role: "user", content: "Hi" }] })).chat.tool_choice;
    expect(choice({ type: "auto" })).toBe("auto");
    expect(choice({ type: "none" })).toBe("none");
    expect(choice({ type: "tool", name: "get_weather" })).toEqual({ type: "function", function: { name: "get_weather" } });
  });

  it("takes no max_tokens for a count, and requires it for a message", () => {
    expect(messagesToChat(body({ model: "m", messages: [{ role: "user", content: "Hi" }] }), true).chat.max_tokens).toBeUndefined();
    expect(refusal({ model: "m", messages: [{ role: "user", content: "Hi" }] }).details[0]?.where).toBe("max_tokens");
  });

  it("refuses what it cannot read or translate, naming the field", () => {
    const cases: [unknown, string][] = [
      [{ max_tokens: 8, messages: [{ role: "user", content: "Hi" }] }, "model"],
      [{ model: "m", max_tokens: 8, messages: [] }, "messages"],
      [{ model: "m", max_tokens: 8, messages: [{ role: "system", content: "Hi" }] }, "messages.0.role"],
      [{ model: "m", max_tokens: 8, messages: [{ role: "user", content: [{ type: "document", source: {} }] }] }, "messages.0.content.0.type"],
      [{ model: "m", max_tokens: 8, messages: [{ role: "user", content: [{ type: "tool_use", id: "t", name: "n", input: {} }] }] }, "messages.0.content.0"],
      [{ model: "m", max_tokens: 8, messages: [{ role: "assistant", content: [{ type: "image", source: { type: "url", url: "http://x/y.png" } }] }] }, "messages.0.content.0"],
      [{ model: "m", max_tokens: 8, messages: [{ role: "user", content: [{ type: "tool_result", tool_use_id: "t", content: [{ type: "image", source: { type: "url", url: "http://x" } }] }] }] }, "messages.0.content.0.content.0"],
      [{ model: "m", max_tokens: 8, tools: [{ type: "web_search_20250305", name: "web_search" }], messages: [{ role: "user", content: "Hi" }] }, "tools.0.input_schema"],
      [{ model: "m", max_tokens: 8, tool_choice: { type: "any" }, messages: [{ role: "user", content: "Hi" }] }, "tool_choice"],
      [{ model: "m", max_tokens: 8, tools: [{ name: "a", input_schema: {} }], tool_choice: { type: "tool", name: "b" }, messages: [{ role: "user", content: "Hi" }] }, "tool_choice.name"],
      [{ model: "m", max_tokens: 0, messages: [{ role: "user", content: "Hi" }] }, "max_tokens"],
    ];
    for (const [value, where] of cases) {
      const error = refusal(value);
      expect({ where: error.details[0]?.where, code: error.code }).toEqual({ where, code: "invalid_input" });
      expect(error.hint).toContain("Anthropic's Messages API");
    }
    expect(() => messagesToChat(Buffer.from("{not json"))).toThrow("not JSON");
  });
});

describe("a chat completion as an Anthropic message", () => {
  it("gives text and tool_use blocks, the stop reason and the usage", () => {
    const chat = {
      id: "c1",
      model: "m",
      choices: [{ index: 0, finish_reason: "tool_calls", message: { content: "Let me look.", tool_calls: [{ id: "call_1", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } }, { id: "call_2", function: { name: "f", arguments: "not json" } }] } }],
      usage: { prompt_tokens: 12, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 8 } },
    };
    expect(chatToMessage(JSON.stringify(chat), [], "asked")).toEqual({
      id: "msg_c1",
      type: "message",
      role: "assistant",
      model: "m",
      content: [
        { type: "text", text: "Let me look." },
        { type: "tool_use", id: "call_1", name: "get_weather", input: { city: "Oslo" } },
        { type: "tool_use", id: "call_2", name: "f", input: { arguments: "not json" } },
      ],
      stop_reason: "tool_use",
      stop_sequence: null,
      usage: { input_tokens: 12, output_tokens: 5, cache_read_input_tokens: 8 },
    });
    const ended = (finish: string, stopReason?: string) => chatToMessage(JSON.stringify({ id: "c", choices: [{ finish_reason: finish, stop_reason: stopReason, message: { content: "x" } }] }), ["END"], "asked");
    expect(ended("stop")).toMatchObject({ stop_reason: "end_turn", stop_sequence: null, model: "asked", usage: { input_tokens: 0, output_tokens: 0 } });
    expect(ended("length").stop_reason).toBe("max_tokens");
    expect(ended("stop", "END")).toMatchObject({ stop_reason: "stop_sequence", stop_sequence: "END" });
  });
});

describe("errors in Anthropic's shape", () => {
  it("types an OpenAI-shaped error by its status and keeps its code in the message", () => {
    const openai = JSON.stringify({ error: { message: "no model named x", type: "invalid_request_error", param: null, code: "model_not_found" } });
    expect(anthropicErrorFromOpenAI(404, openai)).toEqual({ type: "error", error: { type: "not_found_error", message: "model_not_found: no model named x" } });
    const types = [400, 401, 403, 404, 413, 429, 500, 502, 503, 529].map((status) => anthropicErrorFromOpenAI(status, openai).error.type);
    expect(types).toEqual(["invalid_request_error", "authentication_error", "permission_error", "not_found_error", "request_too_large", "rate_limit_error", "api_error", "api_error", "overloaded_error", "overloaded_error"]);
    expect(anthropicErrorFromOpenAI(502, "Bad Gateway").error.message).toBe("Bad Gateway");
  });
});
