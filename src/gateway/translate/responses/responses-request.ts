import { z } from "zod";
import { bodyRefusal, parseJsonBody, refusalFromZod } from "../body-refusal.js";

/**
 * OpenAI's Responses API request, for a model whose engine does not serve
 * /v1/responses, as the chat completion every engine takes. Read loosely:
 * fields that change nothing about the answer (include, truncation,
 * reasoning's effort, service_tier) are let be.
 */
const api = "OpenAI's Responses API";

const inputText = z.looseObject({ type: z.enum(["input_text", "output_text"]), text: z.string() });
const inputImage = z.looseObject({ type: z.literal("input_image"), image_url: z.string().nullish(), file_id: z.string().nullish(), detail: z.string().nullish() });
const refusalPart = z.looseObject({ type: z.literal("refusal"), refusal: z.string() });
const contentPart = z.discriminatedUnion("type", [inputText, inputImage, refusalPart], { message: "expected a content part of type input_text, input_image or output_text" });

const messageItem = z.looseObject({
  type: z.literal("message").optional(),
  role: z.enum(["user", "assistant", "system", "developer"]),
  content: z.union([z.string(), z.array(contentPart)]),
});
const functionCallItem = z.looseObject({ type: z.literal("function_call"), call_id: z.string(), name: z.string(), arguments: z.string() });
const functionOutputItem = z.looseObject({
  type: z.literal("function_call_output"),
  call_id: z.string(),
  output: z.union([z.string(), z.array(contentPart)]),
});
// The model's earlier reasoning: an engine behind chat completions takes no such turn.
const reasoningItem = z.looseObject({ type: z.literal("reasoning") });

const functionTool = z.looseObject({
  type: z.literal("function"),
  name: z.string().min(1),
  description: z.string().nullish(),
  parameters: z.record(z.string(), z.unknown()).nullish(),
  strict: z.boolean().nullish(),
});

const textFormat = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("text") }),
  z.looseObject({ type: z.literal("json_object") }),
  z.looseObject({ type: z.literal("json_schema"), name: z.string(), schema: z.record(z.string(), z.unknown()), strict: z.boolean().nullish(), description: z.string().nullish() }),
]);

const responsesRequestSchema = z.looseObject({
  model: z.string().min(1, { message: "required: the model to use, as GET /v1/models lists it" }),
  input: z.union([z.string(), z.array(z.record(z.string(), z.unknown()))], { message: "required: a string, or an array of input items" }),
  instructions: z.string().nullish(),
  max_output_tokens: z.number().int().min(1).nullish(),
  temperature: z.number().nullish(),
  top_p: z.number().nullish(),
  stream: z.boolean().nullish(),
  user: z.string().nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  tools: z.array(z.record(z.string(), z.unknown())).nullish(),
  tool_choice: z.union([z.enum(["auto", "none", "required"]), z.looseObject({ type: z.literal("function"), name: z.string() })]).nullish(),
  text: z.looseObject({ format: textFormat.nullish() }).nullish(),
  previous_response_id: z.string().nullish(),
  store: z.boolean().nullish(),
  background: z.boolean().nullish(),
  conversation: z.unknown().optional(),
});

export type ResponsesRequest = z.infer<typeof responsesRequestSchema>;

/** The chat completion a Responses request becomes, and the request as the answer echoes it. */
export interface TranslatedResponses {
  readonly chat: Record<string, unknown>;
  readonly request: ResponsesRequest;
  readonly stream: boolean;
}

type ChatMessage = Record<string, unknown>;

const stateless = "this gateway keeps no responses (it answers each request from what the request holds)";

/** A Responses request as a chat completion. Pure; throws invalid_input naming the field for what cannot be read or translated. */
export function responsesToChat(raw: Buffer): TranslatedResponses {
  const parsed = responsesRequestSchema.safeParse(parseJsonBody(raw, api));
  if (!parsed.success) throw refusalFromZod(parsed.error, api);
  const request = parsed.data;
  if (typeof request.previous_response_id === "string") throw bodyRefusal("previous_response_id", `${stateless}; send the earlier turns in input instead`, api);
  if (request.conversation !== undefined && request.conversation !== null) throw bodyRefusal("conversation", `${stateless}; send the earlier turns in input instead`, api);
  if (request.store === true) throw bodyRefusal("store", `${stateless}; send store: false, or leave it out`, api);
  if (request.background === true) throw bodyRefusal("background", "this gateway answers a Responses request while the client waits; leave background out", api);
  const messages: ChatMessage[] = [];
  if (typeof request.instructions === "string" && request.instructions.length > 0) messages.push({ role: "system", content: request.instructions });
  if (typeof request.input === "string") messages.push({ role: "user", content: request.input });
  else request.input.forEach((item, index) => addItem(messages, item, `input.${index}`));
  const chat: Record<string, unknown> = { model: request.model, messages };
  if (typeof request.max_output_tokens === "number") chat.max_tokens = request.max_output_tokens;
  if (request.stream === true) {
    chat.stream = true;
    // response.completed carries the usage: the engine is asked for it.
    chat.stream_options = { include_usage: true };
  }
  for (const field of ["temperature", "top_p", "user", "parallel_tool_calls"] as const) {
    if (request[field] !== undefined && request[field] !== null) chat[field] = request[field];
  }
  const tools = (request.tools ?? []).map((tool, index) => {
    const parsedTool = functionTool.safeParse(tool);
    if (!parsedTool.success) {
      const type = typeof tool.type === "string" ? tool.type : "without a type";
      throw bodyRefusal(`tools.${index}`, `a tool of type ${type} is one of OpenAI's own; this model's engine takes function tools only`, api);
    }
    const { name, description, parameters, strict } = parsedTool.data;
    return { type: "function", function: { name, ...(description ? { description } : {}), parameters: parameters ?? { type: "object", properties: {} }, ...(typeof strict === "boolean" ? { strict } : {}) } };
  });
  if (tools.length > 0) chat.tools = tools;
  const choice = request.tool_choice;
  if (choice !== undefined && choice !== null) chat.tool_choice = typeof choice === "string" ? choice : { type: "function", function: { name: choice.name } };
  const format = request.text?.format;
  if (format?.type === "json_object") chat.response_format = { type: "json_object" };
  if (format?.type === "json_schema") {
    chat.response_format = {
      type: "json_schema",
      json_schema: { name: format.name, schema: format.schema, ...(typeof format.strict === "boolean" ? { strict: format.strict } : {}), ...(format.description ? { description: format.description } : {}) },
    };
  }
  return { chat, request, stream: request.stream === true };
}

/** One input item onto the chat's messages: consecutive function calls join the assistant turn before them. */
function addItem(messages: ChatMessage[], item: Record<string, unknown>, at: string): void {
  const type = item.type ?? "message";
  const schema = type === "message" ? messageItem : type === "function_call" ? functionCallItem : type === "function_call_output" ? functionOutputItem : type === "reasoning" ? reasoningItem : undefined;
  if (schema === undefined) {
    throw bodyRefusal(`${at}.type`, `an item of type ${String(type)} cannot be translated to a chat completion (this model's engine does not serve /v1/responses); send message, function_call and function_call_output items`, api);
  }
  const parsed = (schema as z.ZodType).safeParse(item);
  if (!parsed.success) throw prefixed(refusalFromZod(parsed.error, api), at);
  const value = parsed.data as z.infer<typeof functionCallItem> | z.infer<typeof functionOutputItem> | z.infer<typeof reasoningItem> | z.infer<typeof messageItem>;
  if (value.type === "reasoning") return;
  if (value.type === "function_call") {
    const call = { id: value.call_id, type: "function", function: { name: value.name, arguments: value.arguments } };
    const last = messages.at(-1);
    if (last?.role === "assistant") last.tool_calls = [...((last.tool_calls as unknown[] | undefined) ?? []), call];
    else messages.push({ role: "assistant", content: null, tool_calls: [call] });
    return;
  }
  if (value.type === "function_call_output") {
    messages.push({ role: "tool", tool_call_id: value.call_id, content: typeof value.output === "string" ? value.output : partsText(value.output, `${at}.output`) });
    return;
  }
  const role = value.role === "developer" ? "system" : value.role;
  if (typeof value.content === "string") {
    messages.push({ role, content: value.content });
    return;
  }
  const parts = value.content.map((part, index) => {
    if (part.type === "input_image") {
      if (typeof part.image_url !== "string") throw bodyRefusal(`${at}.content.${index}.image_url`, "required here: the image's URL or data URL (this gateway keeps no files, so file_id cannot be read)", api);
      return { type: "image_url", image_url: { url: part.image_url, ...(part.detail ? { detail: part.detail } : {}) } };
    }
    return { type: "text", text: part.type === "refusal" ? part.refusal : part.text };
  });
  const onlyText = parts.every((part) => part.type === "text");
  if (role !== "user" && !onlyText) throw bodyRefusal(`${at}.content`, `images belong in a user message, not a ${value.role} one`, api);
  messages.push({ role, content: onlyText ? parts.map((part) => (part as { text: string }).text).join("\n") : parts });
}

function partsText(parts: readonly z.infer<typeof contentPart>[], at: string): string {
  return parts
    .map((part, index) => {
      if (part.type === "input_image") throw bodyRefusal(`${at}.${index}`, "an image in a function call's output has no place in a chat completion's tool message", api);
      return part.type === "refusal" ? part.refusal : part.text;
    })
    .join("\n");
}

function prefixed(error: ReturnType<typeof refusalFromZod>, at: string): ReturnType<typeof refusalFromZod> {
  const detail = error.details[0];
  return bodyRefusal(detail && detail.where !== "body" ? `${at}.${detail.where}` : at, detail?.message ?? "not readable", api);
}
