import { z } from "zod";
import { bodyRefusal, parseJsonBody, refusalFromZod } from "../body-refusal.js";

/**
 * Anthropic's Messages API request, read loosely (clients add fields such as
 * cache_control that change nothing here), and translated to the chat
 * completion the gateway's request path and every engine take.
 */
const api = "Anthropic's Messages API";

const textBlock = z.looseObject({ type: z.literal("text"), text: z.string() });
const imageSource = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("base64"), media_type: z.string(), data: z.string() }),
  z.looseObject({ type: z.literal("url"), url: z.string() }),
]);
const imageBlock = z.looseObject({ type: z.literal("image"), source: imageSource });
const toolUseBlock = z.looseObject({ type: z.literal("tool_use"), id: z.string(), name: z.string(), input: z.unknown() });
const toolResultBlock = z.looseObject({
  type: z.literal("tool_result"),
  tool_use_id: z.string(),
  content: z.union([z.string(), z.array(z.discriminatedUnion("type", [textBlock, imageBlock]))]).optional(),
  is_error: z.boolean().optional(),
});
// The model's earlier reasoning: an engine behind chat completions takes no such turn, and it changes no answer's meaning.
const thinkingBlock = z.looseObject({ type: z.enum(["thinking", "redacted_thinking"]) });
const contentBlock = z.discriminatedUnion("type", [textBlock, imageBlock, toolUseBlock, toolResultBlock, thinkingBlock], {
  message: "expected a content block of type text, image, tool_use, tool_result or thinking",
});

const toolSchema = z.looseObject({
  name: z.string().min(1),
  description: z.string().optional(),
  input_schema: z.record(z.string(), z.unknown(), {
    message: "required: the tool's JSON schema (Anthropic's own server tools, such as web_search or bash, are not served here: define the tool yourself)",
  }),
  type: z.union([z.literal("custom"), z.null()]).optional(),
});

const toolChoiceSchema = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("auto"), disable_parallel_tool_use: z.boolean().optional() }),
  z.looseObject({ type: z.literal("any"), disable_parallel_tool_use: z.boolean().optional() }),
  z.looseObject({ type: z.literal("tool"), name: z.string(), disable_parallel_tool_use: z.boolean().optional() }),
  z.looseObject({ type: z.literal("none") }),
]);

const messagesRequestSchema = z.looseObject({
  model: z.string().min(1, { message: "required: the model to use, as GET /v1/models lists it" }),
  max_tokens: z.number().int().min(1).optional(),
  messages: z.array(z.looseObject({ role: z.enum(["user", "assistant"]), content: z.union([z.string(), z.array(contentBlock)]) })),
  system: z.union([z.string(), z.array(textBlock)]).optional(),
  stop_sequences: z.array(z.string()).optional(),
  stream: z.boolean().optional(),
  temperature: z.number().min(0).optional(),
  top_p: z.number().min(0).max(1).optional(),
  top_k: z.number().int().min(0).optional(),
  metadata: z.looseObject({ user_id: z.string().nullish() }).optional(),
  tools: z.array(toolSchema).optional(),
  tool_choice: toolChoiceSchema.optional(),
});

type ContentBlock = z.infer<typeof contentBlock>;

/** The chat completion a Messages request becomes, and what the answer's translation needs to know of the request. */
export interface TranslatedMessages {
  readonly chat: Record<string, unknown>;
  readonly model: string;
  readonly stream: boolean;
  readonly stopSequences: readonly string[];
}

type ChatMessage = Record<string, unknown>;

/**
 * A Messages request (POST /v1/messages, or /v1/messages/count_tokens when
 * `counting`, which takes no max_tokens) as a chat completion. Pure; throws
 * invalid_input naming the field for what cannot be read or translated.
 */
export function messagesToChat(raw: Buffer, counting = false): TranslatedMessages {
  const parsed = messagesRequestSchema.safeParse(parseJsonBody(raw, api));
  if (!parsed.success) throw refusalFromZod(parsed.error, api);
  const request = parsed.data;
  if (!counting && request.max_tokens === undefined) throw bodyRefusal("max_tokens", "required: the most tokens the answer may take (Anthropic's API has no default)", api);
  if (request.messages.length === 0) throw bodyRefusal("messages", "required: at least one message", api);
  const messages: ChatMessage[] = [];
  if (request.system !== undefined) {
    const system = typeof request.system === "string" ? request.system : request.system.map((block) => block.text).join("\n\n");
    if (system.length > 0) messages.push({ role: "system", content: system });
  }
  request.messages.forEach((message, index) => {
    if (typeof message.content === "string") messages.push({ role: message.role, content: message.content });
    else if (message.role === "user") messages.push(...userTurn(message.content, `messages.${index}.content`));
    else messages.push(assistantTurn(message.content, `messages.${index}.content`));
  });
  const chat: Record<string, unknown> = { model: request.model, messages };
  if (request.max_tokens !== undefined) chat.max_tokens = request.max_tokens;
  if (request.stream === true) {
    chat.stream = true;
    // The Anthropic stream ends with the usage in message_delta: the engine is asked for it whatever the client did.
    chat.stream_options = { include_usage: true };
  }
  if (request.stop_sequences !== undefined && request.stop_sequences.length > 0) chat.stop = request.stop_sequences;
  if (request.temperature !== undefined) chat.temperature = request.temperature;
  if (request.top_p !== undefined) chat.top_p = request.top_p;
  if (request.top_k !== undefined) chat.top_k = request.top_k;
  if (typeof request.metadata?.user_id === "string") chat.user = request.metadata.user_id;
  if (request.tools !== undefined && request.tools.length > 0) {
    chat.tools = request.tools.map((tool) => ({ type: "function", function: { name: tool.name, ...(tool.description !== undefined ? { description: tool.description } : {}), parameters: tool.input_schema } }));
    const choice = request.tool_choice;
    if (choice !== undefined) {
      chat.tool_choice = choice.type === "auto" ? "auto" : choice.type === "any" ? "required" : choice.type === "none" ? "none" : { type: "function", function: { name: choice.name } };
      if (choice.type !== "none" && choice.disable_parallel_tool_use === true) chat.parallel_tool_calls = false;
      if (choice.type === "tool" && !request.tools.some((tool) => tool.name === choice.name)) {
        throw bodyRefusal("tool_choice.name", `names ${choice.name}, which is not among the tools (${request.tools.map((tool) => tool.name).join(", ")})`, api);
      }
    }
  } else if (request.tool_choice !== undefined && request.tool_choice.type !== "none" && request.tool_choice.type !== "auto") {
    throw bodyRefusal("tool_choice", `asks for a tool (${request.tool_choice.type}) but the request has no tools`, api);
  }
  return { chat, model: request.model, stream: request.stream === true, stopSequences: request.stop_sequences ?? [] };
}

/**
 * A user turn's blocks: its tool results first, each as a tool message (chat
 * completions answers a call with a message of role tool, right after the
 * assistant's call), then its text and images as one user message.
 */
function userTurn(blocks: readonly ContentBlock[], at: string): ChatMessage[] {
  const results: ChatMessage[] = [];
  const parts: Record<string, unknown>[] = [];
  blocks.forEach((block, index) => {
    switch (block.type) {
      case "text":
        parts.push({ type: "text", text: block.text });
        break;
      case "image":
        parts.push({ type: "image_url", image_url: { url: block.source.type === "base64" ? `data:${block.source.media_type};base64,${block.source.data}` : block.source.url } });
        break;
      case "tool_result":
        results.push({ role: "tool", tool_call_id: block.tool_use_id, content: toolResultText(block, `${at}.${index}`) });
        break;
      case "tool_use":
        throw bodyRefusal(`${at}.${index}`, "a tool_use block belongs in an assistant turn", api);
      default:
        break;
    }
  });
  if (parts.length === 0) return results;
  const onlyText = parts.every((part) => part.type === "text");
  const content = onlyText ? parts.map((part) => part.text as string).join("\n") : parts;
  return [...results, { role: "user", content }];
}

function toolResultText(block: z.infer<typeof toolResultBlock>, at: string): string {
  const content = block.content ?? "";
  let text: string;
  if (typeof content === "string") text = content;
  else {
    const image = content.findIndex((part) => part.type === "image");
    if (image >= 0) throw bodyRefusal(`${at}.content.${image}`, "an image in a tool result has no place in a chat completion's tool message; send it in a user turn's content instead", api);
    text = content.map((part) => (part.type === "text" ? part.text : "")).join("\n");
  }
  // A chat completion's tool message has no error flag: the words say it, so the model reads it as a failure.
  return block.is_error === true ? `Error: ${text}` : text;
}

function assistantTurn(blocks: readonly ContentBlock[], at: string): ChatMessage {
  const text: string[] = [];
  const calls: Record<string, unknown>[] = [];
  blocks.forEach((block, index) => {
    if (block.type === "text") text.push(block.text);
    else if (block.type === "tool_use") calls.push({ id: block.id, type: "function", function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) } });
    else if (block.type === "image" || block.type === "tool_result") throw bodyRefusal(`${at}.${index}`, `a ${block.type} block belongs in a user turn`, api);
  });
  const message: ChatMessage = { role: "assistant", content: text.length > 0 ? text.join("") : calls.length > 0 ? null : "" };
  if (calls.length > 0) message.tool_calls = calls;
  return message;
}
