import type { ChatCompletionRequest, ResponsesRequest } from "../openai-server/openai-request-schemas.js";
import { unsupportedSchemaKeyword, type SimAnswerShape, type SimTool } from "./sim-choices.js";
import type { SimConversation } from "./sim-conversation.js";
import { jsonObjectTemplate } from "./sim-json-template.js";

export type ShapeOrRefusal = SimAnswerShape | { refusal: string; param: string };

/** Whether `text` names the tool: its name as a word, or with its underscores and dashes read as spaces ("get weather"). */
export function mentionsTool(text: string, name: string): boolean {
  const escape = (value: string) => value.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const spaced = name.replace(/[_-]+/g, " ");
  return new RegExp(`(^|\\W)(${escape(name)}|${escape(spaced)})(\\W|$)`, "i").test(text);
}

function toolsShape(tools: readonly SimTool[]): ShapeOrRefusal {
  for (const tool of tools) {
    const keyword = unsupportedSchemaKeyword(tool.parameters);
    if (keyword !== undefined) return { refusal: `the simulated engine cannot generate arguments for a parameters schema using ${keyword}; use a schema of types, properties, items and enum`, param: "tools" };
  }
  return { kind: "tools", tools };
}

/**
 * What the chat request asks the answer to be, as a model that follows its
 * instructions answers:
 * - tool_choice naming a function: a call of it; "required": a call of every
 *   tool offered (parallel tool calls), or of the first when
 *   parallel_tool_calls is false;
 * - tool_choice "auto" (or none given) with tools: a call of each tool the
 *   last user turn names (by name, or with its underscores read as spaces),
 *   the first only when parallel_tool_calls is false; text when it names
 *   none, or when the last turn is a tool's result (the answer then reads it);
 * - response_format json_schema: JSON that validates against the schema;
 *   json_object: an object of the keys the instructions name (jsonObjectTemplate), else `{"answer": ...}`;
 * - text otherwise.
 * A refusal names the field that cannot be served.
 */
export function chatAnswerShape(
  body: Pick<ChatCompletionRequest, "tools" | "tool_choice" | "response_format" | "parallel_tool_calls">,
  conversation: Pick<SimConversation, "toolResult" | "lastUserText" | "instructions">,
): ShapeOrRefusal {
  const tools = (body.tools ?? []).filter((tool) => tool.type === "function").map((tool) => ({ name: tool.function.name, parameters: tool.function.parameters }));
  const parallel = body.parallel_tool_calls !== false;
  const choice = body.tool_choice;
  if (choice !== undefined && choice !== null && choice !== "none" && choice !== "auto") {
    if (tools.length === 0) return { refusal: `tool_choice ${JSON.stringify(choice)} needs at least one function in tools`, param: "tool_choice" };
    if (choice === "required") return toolsShape(parallel ? tools : tools.slice(0, 1));
    const wanted = tools.find((tool) => tool.name === choice.function.name);
    if (wanted === undefined) {
      return { refusal: `tool_choice names the function ${JSON.stringify(choice.function.name)}, which is not in tools (${tools.map((tool) => tool.name).join(", ")})`, param: "tool_choice" };
    }
    return toolsShape([wanted]);
  }
  if (choice !== "none" && conversation.toolResult === undefined) {
    const named = tools.filter((tool) => mentionsTool(conversation.lastUserText, tool.name));
    if (named.length > 0) return toolsShape(parallel ? named : named.slice(0, 1));
  }
  const format = body.response_format;
  if (format?.type === "json_object") {
    const template = jsonObjectTemplate(conversation.instructions);
    return template === undefined ? { kind: "json" } : { kind: "json", schema: template };
  }
  if (format?.type === "json_schema") {
    const schema = format.json_schema?.schema;
    if (schema === undefined) return { refusal: "response_format json_schema needs json_schema.schema", param: "response_format" };
    const keyword = unsupportedSchemaKeyword(schema);
    if (keyword !== undefined) return { refusal: `the simulated engine cannot generate JSON for a schema using ${keyword}; use a schema of types, properties, items and enum`, param: "response_format" };
    return { kind: "json", schema };
  }
  return { kind: "text" };
}

/** A Responses API request's tools, tool_choice and text.format in the chat API's terms, so one rule decides the answer's shape. */
export function responsesAnswerShape(
  body: Pick<ResponsesRequest, "tools" | "tool_choice" | "text" | "parallel_tool_calls">,
  conversation: Pick<SimConversation, "toolResult" | "lastUserText" | "instructions">,
): ShapeOrRefusal {
  const tools = (body.tools ?? []).flatMap((tool) => (tool.type === "function" && tool.name !== undefined ? [{ type: "function", function: { name: tool.name, parameters: tool.parameters } }] : []));
  const choice = body.tool_choice;
  const format = body.text?.format;
  const shape = chatAnswerShape(
    {
      tools,
      tool_choice: typeof choice === "object" && choice !== null ? { type: "function", function: { name: choice.name } } : choice,
      response_format: format === undefined ? undefined : { type: format.type, json_schema: { schema: format.schema } },
      parallel_tool_calls: body.parallel_tool_calls,
    },
    conversation,
  );
  // The Responses API names the fields otherwise.
  if ("refusal" in shape) return { refusal: shape.refusal, param: shape.param === "response_format" ? "text.format" : shape.param };
  return shape;
}
