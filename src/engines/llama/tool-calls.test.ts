import { describe, expect, it } from "vitest";
import { readAutoCalls, readRequiredCalls, toolCallSchema, writtenCalls } from "./tool-calls.js";

const weather = { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } };
const time = { name: "get_time" };

describe("tool calls", () => {
  it("builds one call of the named function when a function is named", () => {
    expect(toolCallSchema([weather, time], "get_weather", false)).toEqual({
      schema: { type: "object", properties: { name: { const: "get_weather" }, arguments: weather.parameters }, required: ["name", "arguments"], additionalProperties: false },
    });
  });

  it("builds a list of calls of any tool when parallel calls are allowed", () => {
    const result = toolCallSchema([weather, time], undefined, true);
    expect(result).toMatchObject({ schema: { type: "array", minItems: 1, items: { oneOf: [{ properties: { name: { const: "get_weather" } } }, { properties: { name: { const: "get_time" } } }] } } });
  });

  it("refuses a named function that is not among the tools", () => {
    expect(toolCallSchema([weather], "nope", false)).toEqual({ problem: expect.stringContaining('"nope", which is not one of tools (get_weather)') });
  });

  it("refuses parameters the grammar cannot enforce, naming the tool's place", () => {
    const strict = { name: "pick", parameters: { type: "object", properties: { n: { type: "integer", minimum: 1 } } } };
    expect(toolCallSchema([weather, strict], undefined, false)).toEqual({ problem: expect.stringContaining('tools[1].function.parameters.properties.n uses "minimum"') });
  });

  it("reads a required call and a list of calls into OpenAI's shape", () => {
    const [one] = readRequiredCalls('{"name":"get_weather","arguments":{"city":"Oslo"}}', [weather]);
    expect(one).toEqual({ id: expect.stringMatching(/^call_/), type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } });
    expect(readRequiredCalls('[{"name":"get_time","arguments":{}},{"name":"get_weather","arguments":{"city":"x"}}]', [weather, time]).map((call) => call.function.name)).toEqual(["get_time", "get_weather"]);
  });

  it("reads calls out of an auto answer and keeps the text before them", () => {
    const answer = 'Let me look.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>\n<tool_call>{"name":"get_time","arguments":{}}</tool_call>';
    const read = readAutoCalls(answer, [weather, time], true);
    expect(read.content).toBe("Let me look.");
    expect(read.calls.map((call) => call.function.name)).toEqual(["get_weather", "get_time"]);
    expect(readAutoCalls(answer, [weather, time], false).calls).toHaveLength(1);
  });

  it("leaves an auto answer as text when its block is not a call of a declared tool", () => {
    const answer = '<tool_call>{"name":"rm_rf","arguments":{}}</tool_call>';
    expect(readAutoCalls(answer, [weather], true)).toEqual({ content: answer, calls: [] });
    expect(readAutoCalls("plain words", [weather], true)).toEqual({ content: "plain words", calls: [] });
  });

  it("writes an earlier turn's calls back as the model writes them", () => {
    expect(writtenCalls([{ function: { name: "get_time", arguments: "{}" } }])).toBe('<tool_call>\n{"name":"get_time","arguments":{}}\n</tool_call>');
  });
});
