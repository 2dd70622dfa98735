import type { FastifyInstance, FastifyReply } from "fastify";
import type { EngineName } from "../../catalog/schema.js";
import { engineServes } from "../../protocol/engine-routes.js";
import { postWithBody } from "../openai-server/body-route.js";
import { chatCompletionRequestSchema, completionRequestSchema, responsesRequestSchema } from "../openai-server/openai-request-schemas.js";
import { errorBody } from "../openai-server/openai-error-body.js";
import { simBodyRefusal } from "./sim-dialect.js";
import { approximateTokenCount, type SimAnswerRequest } from "./sim-text.js";
import { simulatedChoices } from "./sim-choices.js";
import { chatWire, completionWire, responsesWire, type DecodePlan, type DecodeWire } from "./sim-wire.js";
import { chatAnswerShape, responsesAnswerShape } from "./sim-answer-shape.js";
import { chatConversation, responsesConversation } from "./sim-conversation.js";
import { samplingRefusal, stopSequences } from "./sim-sampling.js";

/** What the generation routes need of the engine that serves them: its checks, its queue and its clock. */
export interface GenerationHost {
  readonly engine: EngineName;
  /** The checks every inference request passes before it may queue; a reply was sent when it returns false. */
  admit(reply: FastifyReply, model: string): Promise<boolean>;
  /** Whether prompt and answer fit the context; a 400 was sent when it returns false. */
  checkContext(reply: FastifyReply, promptTokens: number, maxTokens: number | undefined, maxTokensField: string, promptField?: string): boolean;
  /** Who answers: the adapter the request chose, else the base model. */
  answeringName(body: { model: string; lora?: { id: number; scale: number }[] | null | undefined; lora_path?: string | null | undefined }): string;
  decode(reply: FastifyReply, plan: DecodePlan, wire: DecodeWire): Promise<void>;
}

/** The routes that generate text token by token: chat completions, legacy completions and (where the engine has it) the Responses API. */
export function registerGenerationRoutes(server: FastifyInstance, host: GenerationHost): void {
  postWithBody(server, "/v1/chat/completions", chatCompletionRequestSchema, simBodyRefusal, async (data, _request, reply) => {
    if (!(await host.admit(reply, data.model))) return reply;
    const sampling = samplingRefusal(data);
    if (sampling !== undefined) return reply.code(400).send(errorBody(400, "BadRequestError", sampling.message, sampling.param));
    const conversation = chatConversation(data.messages);
    const promptText = conversation.promptText;
    const maxTokens = data.max_completion_tokens ?? data.max_tokens ?? undefined;
    const promptTokens = approximateTokenCount(promptText);
    const shape = chatAnswerShape(data, conversation);
    if ("refusal" in shape) return reply.code(400).send(errorBody(400, "BadRequestError", shape.refusal, shape.param));
    if (!host.checkContext(reply, promptTokens, maxTokens, data.max_completion_tokens != null ? "max_completion_tokens" : "max_tokens")) return reply;
    const answer: SimAnswerRequest = {
      modelName: host.answeringName(data),
      prompt: conversation.prompt,
      context: promptText,
      maxTokens,
      ignoreEos: data.ignore_eos === true,
      seed: data.seed ?? undefined,
      stop: stopSequences(data.stop),
    };
    const topLogprobs = data.logprobs === true ? (data.top_logprobs ?? 0) : undefined;
    await host.decode(
      reply,
      { route: "/v1/chat/completions", model: data.model, idPrefix: "chatcmpl", promptTokens, promptText, stream: data.stream === true, choices: () => simulatedChoices(answer, shape, data.n ?? 1, "chatcmpl") },
      chatWire(data.model, data.stream_options?.include_usage === true, topLogprobs, data.seed ?? 0),
    );
    return reply;
  });

  postWithBody(server, "/v1/completions", completionRequestSchema, simBodyRefusal, async (data, _request, reply) => {
    if (!(await host.admit(reply, data.model))) return reply;
    const sampling = samplingRefusal(data);
    if (sampling !== undefined) return reply.code(400).send(errorBody(400, "BadRequestError", sampling.message, sampling.param));
    const prompt = data.prompt;
    const first = Array.isArray(prompt) ? prompt[0] : prompt;
    // Token ids count one each; text is approximated.
    const promptText = typeof first === "string" ? first : Array.isArray(first) ? first.join(" ") : (prompt as number[]).join(" ");
    const promptTokens =
      typeof first === "string" ? approximateTokenCount(first) : Array.isArray(first) ? first.length : (prompt as number[]).length;
    // OpenAI's and vLLM's default for the legacy completions API.
    const maxTokens = data.max_tokens ?? 16;
    if (!host.checkContext(reply, promptTokens, maxTokens, "max_tokens")) return reply;
    const answer: SimAnswerRequest = {
      modelName: host.answeringName(data),
      prompt: promptText,
      maxTokens,
      ignoreEos: data.ignore_eos === true,
      seed: data.seed ?? undefined,
      stop: stopSequences(data.stop),
    };
    await host.decode(
      reply,
      { route: "/v1/completions", model: data.model, idPrefix: "cmpl", promptTokens, ...(typeof first === "string" ? { promptText } : {}), stream: data.stream === true, choices: () => simulatedChoices(answer, { kind: "text" }, data.n ?? 1, "cmpl") },
      completionWire(data.model, data.stream_options?.include_usage === true, data.logprobs ?? undefined, data.seed ?? 0),
    );
    return reply;
  });
  if (engineServes(host.engine, "responses")) {
    postWithBody(server, "/v1/responses", responsesRequestSchema, simBodyRefusal, async (data, _request, reply) => {
      if (!(await host.admit(reply, data.model))) return reply;
      const sampling = samplingRefusal(data);
      if (sampling !== undefined) return reply.code(400).send(errorBody(400, "BadRequestError", sampling.message, sampling.param));
      const conversation = responsesConversation(data.instructions, data.input);
      const promptText = conversation.promptText;
      const maxTokens = data.max_output_tokens ?? undefined;
      const promptTokens = approximateTokenCount(promptText);
      const shape = responsesAnswerShape(data, conversation);
      if ("refusal" in shape) return reply.code(400).send(errorBody(400, "BadRequestError", shape.refusal, shape.param));
      if (!host.checkContext(reply, promptTokens, maxTokens, "max_output_tokens", "input")) return reply;
      const answer: SimAnswerRequest = { modelName: host.answeringName(data), prompt: conversation.prompt, context: promptText, maxTokens, ignoreEos: false };
      await host.decode(
        reply,
        { route: "/v1/responses", model: data.model, idPrefix: "resp", promptTokens, promptText, stream: data.stream === true, choices: () => simulatedChoices(answer, shape, 1, "call") },
        responsesWire(data.model, { instructions: data.instructions ?? null, maxOutputTokens: data.max_output_tokens ?? null }),
      );
      return reply;
    });
  }
}
