import { describe, expect, it } from "vitest";
import { chatConstraint } from "./chat-constraint.js";
import { llamaChatRequestSchema } from "./llama-request-schemas.js";
import { RequestFailed } from "./request-failed.js";

const weather = { type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } };
const request = (fields: Record<string, unknown>) => llamaChatRequestSchema.parse({ model: "m", messages: [{ role: "user", content: "hi" }], ...fields });
const refusal = (fields: Record<string, unknown>) => {
  try {
    chatConstraint(request(fields));
  } catch (error) {
    if (error instanceof RequestFailed) return { status: error.status, param: error.param, message: error.message };
    throw error;
  }
  throw new Error("the request was accepted");
};

describe("chatConstraint", () => {
  it("lets the model choose between text and calls when tools come without tool_choice", () => {
    expect(chatConstraint(request({ tools: [weather] }))).toMatchObject({ kind: "tools-auto", parallel: true });
  });

  it("builds one call when a function is named, even with parallel calls allowed", () => {
    expect(chatConstraint(request({ tools: [weather], tool_choice: { type: "function", function: { name: "get_weather" } } }))).toMatchObject({ kind: "tools-required", parallel: false, schema: { type: "object" } });
  });

  it("builds a list of calls for required unless parallel_tool_calls is false", () => {
    expect(chatConstraint(request({ tools: [weather], tool_choice: "required" }))).toMatchObject({ kind: "tools-required", schema: { type: "array" } });
    expect(chatConstraint(request({ tools: [weather], tool_choice: "required", parallel_tool_calls: false }))).toMatchObject({ kind: "tools-required", schema: { type: "object" } });
  });

  it("answers text when tool_choice is none", () => {
    expect(chatConstraint(request({ tools: [weather], tool_choice: "none" }))).toEqual({ kind: "text" });
  });

  it("builds JSON for json_object and to the schema for json_schema", () => {
    expect(chatConstraint(request({ response_format: { type: "json_object" } }))).toEqual({ kind: "json", schema: undefined });
    expect(chatConstraint(request({ response_format: { type: "json_schema", json_schema: { name: "w", strict: true, schema: { type: "object", properties: { ok: { type: "boolean" } } } } } }))).toEqual({
      kind: "json",
      schema: { type: "object", properties: { ok: { type: "boolean" } } },
    });
  });

  it("refuses a schema the grammar cannot enforce, naming response_format", () => {
    expect(refusal({ response_format: { type: "json_schema", json_schema: { name: "n", schema: { type: "number", minimum: 0 } } } })).toEqual({
      status: 400,
      param: "response_format",
      message: expect.stringContaining('uses "minimum"'),
    });
  });

  it("refuses tool_choice without tools, and a named function that is not declared", () => {
    expect(refusal({ tool_choice: "required" })).toMatchObject({ param: "tool_choice" });
    expect(refusal({ tools: [weather], tool_choice: { type: "function", function: { name: "other" } } })).toMatchObject({ param: "tool_choice" });
  });

  it("refuses a choice between a call and a JSON answer, which one grammar cannot make", () => {
    expect(refusal({ tools: [weather], response_format: { type: "json_object" } })).toMatchObject({ param: "response_format" });
  });

  it("refuses tools that are not functions", () => {
    expect(refusal({ tools: [{ type: "web_search", function: { name: "x" } }] })).toMatchObject({ param: "tools[0].type" });
  });
});
