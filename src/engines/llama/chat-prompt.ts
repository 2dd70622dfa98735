import type { Template } from "@huggingface/jinja";
import type { LlamaChatRequest } from "./llama-request-schemas.js";
import { unsupported } from "./request-failed.js";
import { toolInstructions, writtenCalls, type ToolDefinition } from "./tool-calls.js";

/**
 * A chat request's messages as the model's chat template renders them. A
 * template that knows tools gets `tools` and the turns' `tool_calls`; for
 * one that does not, the tools are described in a system message and calls
 * and their results are written in Hermes' format, which the engine reads back.
 */
export function renderChatPrompt(
  template: Template,
  templateTakesTools: boolean,
  body: LlamaChatRequest,
  tools: readonly ToolDefinition[],
  specialTokens: { readonly bos: string; readonly eos: string },
): string {
  const messages = body.messages.map((message, index) => {
    const parts = typeof message.content === "string" || message.content === null || message.content === undefined ? [] : message.content;
    const other = parts.findIndex((part) => part.type !== "text");
    if (other >= 0) {
      throw unsupported(`messages[${index}].content[${other}]`, `messages[${index}].content[${other}] is of type "${parts[other]?.type}"; this model reads text only`);
    }
    const text = typeof message.content === "string" ? message.content : parts.map((part) => part.text ?? "").join("");
    const calls = message.tool_calls ?? [];
    if (templateTakesTools) {
      return {
        role: message.role,
        content: text,
        ...(calls.length > 0 ? { tool_calls: calls.map((call) => ({ ...call, function: { name: call.function.name, arguments: parsedArguments(call.function.arguments) } })) } : {}),
        ...(message.tool_call_id ? { tool_call_id: message.tool_call_id } : {}),
      };
    }
    if (message.role === "tool") return { role: "tool", content: `<tool_response>\n${text}\n</tool_response>` };
    return { role: message.role, content: calls.length > 0 ? [text, writtenCalls(calls)].filter((piece) => piece !== "").join("\n") : text };
  });
  if (tools.length > 0 && !templateTakesTools) {
    const instructions = toolInstructions(tools);
    const first = messages[0];
    if (first?.role === "system") messages[0] = { ...first, content: `${first.content}\n\n${instructions}` };
    else messages.unshift({ role: "system", content: instructions });
  }
  return template.render({
    messages,
    ...(templateTakesTools && tools.length > 0
      ? { tools: tools.map((tool) => ({ type: "function", function: { name: tool.name, description: tool.description ?? "", parameters: tool.parameters ?? {} } })) }
      : {}),
    add_generation_prompt: true,
    bos_token: specialTokens.bos,
    eos_token: specialTokens.eos,
  });
}

function parsedArguments(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
