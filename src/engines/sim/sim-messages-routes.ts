import type { FastifyInstance, FastifyReply } from "fastify";
import { type EngineName, describeIssues } from "../../catalog/for-engines.js";
import { z } from "zod";
import { chatCompletionRequestSchema } from "../openai-server/openai-request-schemas.js";
import { approximateTokenCount, type SimAnswerRequest } from "./sim-text.js";
import { simulatedChoices, type SimChoice } from "./sim-choices.js";
import { callIndexAt, callsWithArguments, type DecodeContext, type DecodePlan, type DecodeWire, type SendEvent } from "./sim-wire.js";
import { chatAnswerShape } from "./sim-answer-shape.js";
import { chatConversation } from "./sim-conversation.js";
import { samplingRefusal, stopSequences } from "./sim-sampling.js";

/**
 * Anthropic's Messages API (POST /v1/messages) as vLLM serves it, so the
 * gateway's pass-through to engines that speak it natively is exercised
 * end to end: the request is read in Anthropic's terms, answered by the same
 * rules as a chat completion, and written in Anthropic's shapes and event
 * sequence. Only the simulated vLLM serves it: the simulated llama.cpp
 * stands in for llmgw's built-in engine too, which does not.
 */

const blockSchema = z.looseObject({
  type: z.string(),
  text: z.string().optional(),
  id: z.string().optional(),
  name: z.string().optional(),
  input: z.unknown().optional(),
  tool_use_id: z.string().optional(),
  content: z.union([z.string(), z.array(z.looseObject({ type: z.string(), text: z.string().optional() }))]).optional(),
  source: z.looseObject({ type: z.string(), media_type: z.string().optional(), data: z.string().optional(), url: z.string().optional() }).optional(),
});
type Block = z.infer<typeof blockSchema>;

const messagesRequestSchema = z.looseObject({
  model: z.string().min(1),
  max_tokens: z.number().int().min(1),
  messages: z.array(z.looseObject({ role: z.enum(["user", "assistant"]), content: z.union([z.string(), z.array(blockSchema)]) })).min(1),
  system: z.union([z.string(), z.array(blockSchema)]).nullish(),
  stop_sequences: z.array(z.string()).nullish(),
  stream: z.boolean().nullish(),
  temperature: z.number().nullish(),
  top_p: z.number().nullish(),
  top_k: z.number().int().nullish(),
  tools: z.array(z.looseObject({ name: z.string().min(1), description: z.string().optional(), input_schema: z.unknown() })).nullish(),
  tool_choice: z.looseObject({ type: z.enum(["auto", "any", "tool", "none"]), name: z.string().optional(), disable_parallel_tool_use: z.boolean().optional() }).nullish(),
});
type MessagesRequest = z.infer<typeof messagesRequestSchema>;

/** Anthropic's error shape, which vLLM's /v1/messages answers in. */
function anthropicError(type: string, message: string) {
  return { type: "error", error: { type, message } };
}

const blocksText = (blocks: string | readonly { text?: string | undefined }[] | undefined) =>
  typeof blocks === "string" ? blocks : (blocks ?? []).map((block) => block.text ?? "").join(" ");

/** One Anthropic turn as chat messages: tool results become tool turns, tool uses an assistant's calls, images image parts. */
function chatMessagesOf(message: MessagesRequest["messages"][number]): Record<string, unknown>[] {
  if (typeof message.content === "string") return [{ role: message.role, content: message.content }];
  const blocks: readonly Block[] = message.content;
  const results = blocks.filter((block) => block.type === "tool_result").map((block) => ({ role: "tool", tool_call_id: block.tool_use_id ?? "", content: blocksText(block.content) }));
  const calls = blocks.filter((block) => block.type === "tool_use").map((block) => ({ id: block.id ?? "", type: "function", function: { name: block.name ?? "", arguments: JSON.stringify(block.input ?? {}) } }));
  const parts = blocks.flatMap((block): Record<string, unknown>[] => {
    if (block.type === "text") return [{ type: "text", text: block.text ?? "" }];
    if (block.type === "image" && block.source) return [{ type: "image_url", image_url: { url: block.source.url ?? `data:${block.source.media_type ?? "image/png"};base64,${block.source.data ?? ""}` } }];
    return [];
  });
  const rest = parts.length > 0 || calls.length > 0 ? [{ role: message.role, content: parts, ...(calls.length > 0 ? { tool_calls: calls } : {}) }] : [];
  return [...results, ...rest];
}

/** The request as the chat completion the simulation answers by the same rules. */
function chatBodyOf(request: MessagesRequest): Record<string, unknown> {
  const system = request.system === undefined || request.system === null ? [] : [{ role: "system", content: blocksText(request.system) }];
  const choice = request.tool_choice;
  const toolChoice = choice?.type === "any" ? "required" : choice?.type === "tool" ? { type: "function", function: { name: choice.name ?? "" } } : choice?.type;
  return {
    model: request.model,
    max_tokens: request.max_tokens,
    stream: request.stream,
    messages: [...system, ...request.messages.flatMap(chatMessagesOf)],
    temperature: request.temperature,
    top_p: request.top_p,
    top_k: request.top_k,
    stop: request.stop_sequences ?? undefined,
    ...(request.tools ? { tools: request.tools.map((tool) => ({ type: "function", function: { name: tool.name, parameters: tool.input_schema } })) } : {}),
    ...(toolChoice !== undefined ? { tool_choice: toolChoice } : {}),
    ...(choice?.disable_parallel_tool_use === true ? { parallel_tool_calls: false } : {}),
  };
}

/** What the route needs of the engine: the generation routes' host, named here so the two files do not import each other. */
export interface MessagesHost {
  readonly engine: EngineName;
  admit(reply: FastifyReply, model: string): Promise<boolean>;
  checkContext(reply: FastifyReply, promptTokens: number, maxTokens: number | undefined, maxTokensField: string, promptField?: string): boolean;
  answeringName(body: { model: string }): string;
  decode(reply: FastifyReply, plan: DecodePlan, wire: DecodeWire): Promise<void>;
}

export function registerMessagesRoutes(server: FastifyInstance, host: MessagesHost): void {
  if (host.engine !== "vllm") return;
  server.post("/v1/messages", async (request, reply) => {
    const parsed = messagesRequestSchema.safeParse(request.body);
    if (!parsed.success) return reply.code(400).send(anthropicError("invalid_request_error", describeIssues(parsed.error.issues, "body")));
    const chat = chatCompletionRequestSchema.safeParse(chatBodyOf(parsed.data));
    if (!chat.success) return reply.code(400).send(anthropicError("invalid_request_error", describeIssues(chat.error.issues, "body")));
    if (!(await host.admit(reply, parsed.data.model))) return reply;
    const data = chat.data;
    const sampling = samplingRefusal(data);
    if (sampling !== undefined) return reply.code(400).send(anthropicError("invalid_request_error", `${sampling.param}: ${sampling.message}`));
    const conversation = chatConversation(data.messages);
    const promptTokens = approximateTokenCount(conversation.promptText);
    const shape = chatAnswerShape(data, conversation);
    if ("refusal" in shape) return reply.code(400).send(anthropicError("invalid_request_error", `${shape.param}: ${shape.refusal}`));
    if (!host.checkContext(reply, promptTokens, parsed.data.max_tokens, "max_tokens", "messages")) return reply;
    const answer: SimAnswerRequest = {
      modelName: host.answeringName(data),
      prompt: conversation.prompt,
      context: conversation.promptText,
      maxTokens: parsed.data.max_tokens,
      ignoreEos: false,
      stop: stopSequences(data.stop),
    };
    await host.decode(
      reply,
      { route: "/v1/messages", model: data.model, idPrefix: "msg", promptTokens, promptText: conversation.promptText, stream: data.stream === true, choices: () => simulatedChoices(answer, shape, 1, "toolu") },
      messagesWire(data.model),
    );
    return reply;
  });
}

function stopReason(choice: SimChoice): string {
  return choice.finishReason === "tool_calls" ? "tool_use" : choice.finishReason === "length" ? "max_tokens" : "end_turn";
}

/** Anthropic's message and its event sequence: message_start, a content block per run of text or per tool call, message_delta with the usage, message_stop. */
export function messagesWire(model: string): DecodeWire {
  const choiceOf = (context: DecodeContext) => context.choices[0] as SimChoice;
  // Anthropic's ids (and vLLM's on this route) start msg_.
  const idOf = (context: DecodeContext) => context.id.replace(/^msg-/, "msg_");
  const event = (send: SendEvent, type: string, fields: Record<string, unknown>) => send({ type, ...fields }, type);
  const startBlock = (send: SendEvent, choice: SimChoice, index: number) => {
    const call = choice.toolCalls?.[index];
    const block = call === undefined ? { type: "text", text: "" } : { type: "tool_use", id: call.id, name: call.name, input: {} };
    event(send, "content_block_start", { index, content_block: block });
  };
  return {
    done: false,
    open(send, context) {
      const message = { id: idOf(context), type: "message", role: "assistant", model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: context.usage.prompt_tokens, output_tokens: 0 } };
      event(send, "message_start", { message });
      event(send, "ping", {});
      startBlock(send, choiceOf(context), 0);
    },
    token(send, context, index, position) {
      if (index !== 0) return;
      const choice = choiceOf(context);
      const token = choice.tokens[position] ?? "";
      const call = callIndexAt(choice, position);
      if (call > 0 && choice.toolCalls?.[call]?.firstToken === position) {
        event(send, "content_block_stop", { index: call - 1 });
        startBlock(send, choice, call);
      }
      const delta = choice.toolCalls ? { type: "input_json_delta", partial_json: token } : { type: "text_delta", text: token };
      event(send, "content_block_delta", { index: choice.toolCalls ? call : 0, delta });
    },
    close(send, context) {
      const choice = choiceOf(context);
      event(send, "content_block_stop", { index: Math.max(0, (choice.toolCalls?.length ?? 1) - 1) });
      event(send, "message_delta", { delta: { stop_reason: stopReason(choice), stop_sequence: null }, usage: { output_tokens: context.usage.completion_tokens } });
      event(send, "message_stop", {});
    },
    whole(context) {
      const choice = choiceOf(context);
      const content = choice.toolCalls
        ? callsWithArguments(choice).map((call) => ({ type: "tool_use", id: call.id, name: call.name, input: JSON.parse(call.arguments) as unknown }))
        : [{ type: "text", text: choice.tokens.join("") }];
      return {
        id: idOf(context),
        type: "message",
        role: "assistant",
        model,
        content,
        stop_reason: stopReason(choice),
        stop_sequence: null,
        usage: { input_tokens: context.usage.prompt_tokens, output_tokens: context.usage.completion_tokens },
      };
    },
  };
}
