import { grammarSchema } from "./grammar-schema.js";
import type { LlamaChatRequest } from "./llama-request-schemas.js";
import { unsupported } from "./request-failed.js";
import { toolCallSchema, type ToolDefinition } from "./tool-calls.js";

/**
 * What shapes a chat answer: free text, JSON (any, or to a schema), a
 * required tool call built by a grammar, or text that may hold calls.
 */
export type ChatConstraint =
  | { readonly kind: "text" }
  | { readonly kind: "json"; readonly schema: Record<string, unknown> | undefined }
  | { readonly kind: "tools-required"; readonly schema: Record<string, unknown>; readonly tools: readonly ToolDefinition[]; readonly parallel: boolean }
  | { readonly kind: "tools-auto"; readonly tools: readonly ToolDefinition[]; readonly parallel: boolean };

/** The tools a request declares, in the shape the engine reads. */
export function declaredTools(body: LlamaChatRequest): ToolDefinition[] {
  return (body.tools ?? []).map((tool, index) => {
    if (tool.type !== "function") throw unsupported(`tools[${index}].type`, `tools[${index}] is of type "${tool.type}"; the built-in engine calls functions only`);
    const description = (tool.function as { description?: unknown }).description;
    return { name: tool.function.name, description: typeof description === "string" ? description : undefined, parameters: tool.function.parameters };
  });
}

/** The constraint of a chat request, or a 400 naming the field the engine cannot honour. */
export function chatConstraint(body: LlamaChatRequest): ChatConstraint {
  const tools = declaredTools(body);
  const choice = body.tool_choice ?? (tools.length > 0 ? "auto" : "none");
  if (tools.length === 0 && choice !== "none") throw unsupported("tool_choice", "tool_choice is only allowed when tools are given");
  const parallel = body.parallel_tool_calls !== false;
  const format = body.response_format ?? { type: "text" as const };
  if (choice === "required" || typeof choice === "object") {
    const named = typeof choice === "object" ? choice.function.name : undefined;
    const built = toolCallSchema(tools, named, parallel && named === undefined);
    if ("problem" in built) throw unsupported(built.problem.startsWith("tool_choice") ? "tool_choice" : "tools", built.problem);
    return { kind: "tools-required", schema: built.schema, tools, parallel: parallel && named === undefined };
  }
  const json = jsonConstraint(format);
  if (choice === "auto") {
    if (json !== undefined) {
      throw unsupported("response_format", "the built-in engine cannot let the model choose between a tool call and a JSON answer: set tool_choice to \"required\" or \"none\", or drop response_format");
    }
    return { kind: "tools-auto", tools, parallel };
  }
  return json ?? { kind: "text" };
}

function jsonConstraint(format: NonNullable<LlamaChatRequest["response_format"]>): ChatConstraint | undefined {
  if (format.type === "text") return undefined;
  if (format.type === "json_object") return { kind: "json", schema: undefined };
  const schema = format.json_schema?.schema;
  if (schema === undefined) throw unsupported("response_format", "response_format json_schema needs json_schema.schema");
  const built = grammarSchema(schema, "response_format.json_schema.schema");
  if ("problem" in built) throw unsupported("response_format", built.problem);
  return { kind: "json", schema: built.schema };
}
