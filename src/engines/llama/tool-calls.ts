import { randomBytes } from "node:crypto";
import { grammarSchema, type GrammarSchemaResult } from "./grammar-schema.js";

/**
 * Tool calls for the built-in engine, in Hermes' format (which Qwen, Hermes
 * and many GGUF chat templates use): a call is
 * `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`. When a call is
 * required (tool_choice "required" or a named function) the answer is built
 * by a JSON-schema grammar, so it is a valid call whatever the weights say:
 * one call, or a list of calls when parallel calls are allowed. With "auto"
 * the model writes text, and calls in the format above are read out of it.
 */
export interface ToolDefinition {
  readonly name: string;
  readonly description?: string | undefined;
  readonly parameters?: unknown;
}

export interface ToolCall {
  readonly id: string;
  readonly type: "function";
  readonly function: { readonly name: string; readonly arguments: string };
}

/** The most calls one answer makes when parallel calls are allowed: a bound on what the grammar builds. */
export const mostParallelCalls = 4;

const emptyParameters = { type: "object", properties: {}, additionalProperties: false };

/** The grammar's schema for the answer when a call is required; `only` is a named tool_choice. */
export function toolCallSchema(tools: readonly ToolDefinition[], only: string | undefined, parallel: boolean): GrammarSchemaResult {
  const chosen = only === undefined ? tools : tools.filter((tool) => tool.name === only);
  if (chosen.length === 0) return { problem: `tool_choice names the function "${only}", which is not one of tools (${tools.map((tool) => tool.name).join(", ")})` };
  const calls: Record<string, unknown>[] = [];
  for (const tool of chosen) {
    const index = tools.indexOf(tool);
    const parameters = grammarSchema(tool.parameters ?? emptyParameters, `tools[${index}].function.parameters`);
    if ("problem" in parameters) return parameters;
    calls.push({ type: "object", properties: { name: { const: tool.name }, arguments: parameters.schema }, required: ["name", "arguments"], additionalProperties: false });
  }
  const call = calls.length === 1 ? (calls[0] as Record<string, unknown>) : { oneOf: calls };
  return { schema: parallel ? { type: "array", items: call, minItems: 1, maxItems: mostParallelCalls } : call };
}

export function toolCallId(): string {
  return `call_${randomBytes(12).toString("hex")}`;
}

function asCall(value: unknown, tools: readonly ToolDefinition[]): ToolCall | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const { name, arguments: args } = value as { name?: unknown; arguments?: unknown };
  if (typeof name !== "string" || !tools.some((tool) => tool.name === name)) return undefined;
  if (typeof args !== "object" || args === null || Array.isArray(args)) return undefined;
  return { id: toolCallId(), type: "function", function: { name, arguments: JSON.stringify(args) } };
}

/** The calls of an answer built by the grammar of toolCallSchema: one call, or a list of them. */
export function readRequiredCalls(text: string, tools: readonly ToolDefinition[]): ToolCall[] {
  const parsed = JSON.parse(text) as unknown;
  const calls = (Array.isArray(parsed) ? parsed : [parsed]).map((item) => asCall(item, tools));
  if (calls.length === 0 || calls.some((call) => call === undefined)) throw new Error(`the grammar built an answer that is not a call of a declared tool: ${text.slice(0, 200)}`);
  return calls as ToolCall[];
}

const callBlock = /<tool_call>\s*([\s\S]*?)\s*<\/tool_call>/g;

/** Text and the calls written in it, for tool_choice "auto": a block that is not a call of a declared tool stays text. */
export function readAutoCalls(text: string, tools: readonly ToolDefinition[], parallel: boolean): { content: string; calls: ToolCall[] } {
  const start = text.indexOf("<tool_call>");
  if (start < 0) return { content: text, calls: [] };
  const calls: ToolCall[] = [];
  for (const match of text.slice(start).matchAll(callBlock)) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(match[1] ?? "");
    } catch {
      return { content: text, calls: [] };
    }
    const call = asCall(parsed, tools);
    if (call === undefined) return { content: text, calls: [] };
    calls.push(call);
    if (!parallel) break;
  }
  return calls.length === 0 ? { content: text, calls: [] } : { content: text.slice(0, start).trimEnd(), calls };
}

/** The system text that tells a model without a tool-aware chat template what it may call and how. */
export function toolInstructions(tools: readonly ToolDefinition[]): string {
  const signatures = tools.map((tool) => JSON.stringify({ type: "function", function: { name: tool.name, description: tool.description ?? "", parameters: tool.parameters ?? emptyParameters } }));
  return [
    "You may call these functions:",
    "<tools>",
    ...signatures,
    "</tools>",
    'To call one, answer <tool_call>{"name": <function-name>, "arguments": <args-json-object>}</tool_call>',
  ].join("\n");
}

/** An earlier assistant turn's calls, written back as the model would have written them. */
export function writtenCalls(calls: readonly { function: { name: string; arguments: string } }[]): string {
  return calls
    .map((call) => {
      let args: unknown = call.function.arguments;
      try {
        args = JSON.parse(call.function.arguments);
      } catch {
        // kept as the string the client sent
      }
      return `<tool_call>\n${JSON.stringify({ name: call.function.name, arguments: args })}\n</tool_call>`;
    })
    .join("\n");
}
