import { describe, expect, it } from "vitest";
import { chatAnswerShape, mentionsTool } from "./sim-answer-shape.js";
import { stoppedAt } from "./sim-choices.js";
import { chatConversation, responsesConversation } from "./sim-conversation.js";
import { jsonObjectTemplate } from "./sim-json-template.js";
import { samplingRefusal } from "./sim-sampling.js";

describe("the rules a simulated answer follows", () => {
  it("cuts tokens before the earliest stop sequence, inside a token if need be", () => {
    expect(stoppedAt(["Hello", " wor", "ld", "!"], ["ld!", "wor"])).toEqual(["Hello", " "]);
    expect(stoppedAt(["Hello"], ["Hello"])).toEqual([]);
    expect(stoppedAt(["Hello"], ["bye"])).toBeUndefined();
  });

  it("reads the keys a json_object answer should have from a key list or a JSON example, latest turn first", () => {
    expect(jsonObjectTemplate(["Answer with keys: title, year"])).toEqual({ type: "object", properties: { title: { type: "string" }, year: { type: "string" } } });
    expect(jsonObjectTemplate(['Reply like {"score": 0.5, "ok": true, "tags": []} please'])).toEqual({
      type: "object",
      properties: { score: { type: "number" }, ok: { type: "boolean" }, tags: { type: "array", items: {} } },
    });
    expect(jsonObjectTemplate(["Use key: a", "keys: b, c"])).toEqual({ type: "object", properties: { a: { type: "string" } } });
    // Braces that are not a JSON object, and empty objects, name no keys.
    expect(jsonObjectTemplate(["Fill {name} in, or {} if unknown"])).toBeUndefined();
  });

  it("finds a tool named in the user's words, as written or with spaces for underscores, and not inside another word", () => {
    expect(mentionsTool("please use get_weather now", "get_weather")).toBe(true);
    expect(mentionsTool("What does Get Weather say?", "get_weather")).toBe(true);
    expect(mentionsTool("forget_weathers", "get_weather")).toBe(false);
  });

  it("answers a tool result in text, even with the tools still offered, and calls a tool the user names otherwise", () => {
    const tools = [{ type: "function", function: { name: "lookup", parameters: { type: "object" } } }];
    const asking = chatConversation([{ role: "user", content: "lookup the price" }]);
    expect(chatAnswerShape({ tools }, asking)).toEqual({ kind: "tools", tools: [{ name: "lookup", parameters: { type: "object" } }] });
    const answered = chatConversation([
      { role: "user", content: "lookup the price" },
      { role: "assistant", content: null, tool_calls: [{ id: "c1", function: { name: "lookup", arguments: "{}" } }] },
      { role: "tool", tool_call_id: "c1", content: "42 euros" },
    ]);
    expect(answered.toolResult).toEqual({ name: "lookup", content: "42 euros" });
    expect(answered.prompt).toBe("the lookup tool returned 42 euros");
    expect(chatAnswerShape({ tools }, answered)).toEqual({ kind: "text" });
    expect(chatAnswerShape({ tools, tool_choice: "none" }, asking)).toEqual({ kind: "text" });
  });

  it("reads a Responses function_call_output as the result of its call, not as an empty user turn", () => {
    const conversation = responsesConversation("Be brief.", [
      { role: "user", content: [{ type: "input_text", text: "lookup the price" }] },
      { type: "reasoning" },
      { type: "function_call", call_id: "c1", name: "lookup", arguments: "{}" },
      { type: "function_call_output", call_id: "c1", output: "42 euros" },
    ]);
    expect(conversation.toolResult).toEqual({ name: "lookup", content: "42 euros" });
    expect(conversation.promptText).toBe("system: Be brief.\nuser: lookup the price\nassistant: lookup({})\ntool: 42 euros");
    expect(conversation.instructions).toEqual(["lookup the price", "Be brief."]);
  });

  it("passes parameters in vLLM's ranges, including its edges", () => {
    expect(samplingRefusal({ temperature: 0, top_p: 1, presence_penalty: -2, frequency_penalty: 2, top_k: -1, min_p: 0, n: 1, stop: ["x"], logprobs: true, top_logprobs: 5 })).toBeUndefined();
    expect(samplingRefusal({ temperature: 2, n: 4 })).toBeUndefined();
    expect(samplingRefusal({ top_k: -2 })?.param).toBe("top_k");
    expect(samplingRefusal({ min_p: 1.5 })?.param).toBe("min_p");
    expect(samplingRefusal({ repetition_penalty: 0 })?.param).toBe("repetition_penalty");
    // The legacy completions API asks for log probabilities by number.
    expect(samplingRefusal({ logprobs: 2, top_logprobs: 2 })).toBeUndefined();
  });
});
