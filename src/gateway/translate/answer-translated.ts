import type { Gateway } from "../request/gateway.js";
import type { GatewayCaller } from "../policy/gateway-policy.js";
import type { GatewayExchange } from "../wire/gateway-exchange.js";
import { openAIErrorAnswer } from "../wire/openai-error-body.js";
import { writeOpenAIError } from "../wire/write-openai-error.js";
import { engineServes, replicaServesMessages, type RoutingModel } from "../../protocol/index.js";
import { TranslatingResponse } from "./translating-response.js";
import { messagesToChat } from "./anthropic-messages/messages-request.js";
import { anthropicErrorsOnly, anthropicPassThrough, messagesTranslator } from "./anthropic-messages/messages-translator.js";
import { responsesToChat } from "./responses/responses-request.js";
import { responsesTranslator } from "./responses/responses-translator.js";

/**
 * POST /v1/messages and /v1/messages/count_tokens (Anthropic's Messages
 * API), answered by the gateway's one request path (keys, scopes, limits,
 * usage, retries, fallbacks and canaries as on every route). A message is
 * passed through unchanged where every replica it may reach serves the API
 * itself (vLLM, llama-server), and translated to a chat completion and back,
 * as it is written, everywhere else. Tokens are counted here, by the count
 * the gateway's limits use, whatever the engine. Every error on these routes
 * is in Anthropic's shape, an engine's OpenAI-shaped refusal too.
 */
export function answerMessages(gateway: Gateway, exchange: GatewayExchange, counting: boolean): void {
  const refusals = new TranslatingResponse(exchange.response, anthropicErrorsOnly);
  if (!counting && passesMessagesThrough(gateway, exchange.body)) {
    gateway.metrics.apiModes.inc({ api: "messages", mode: "native" });
    void gateway.handle("messages", { ...exchange, response: new TranslatingResponse(exchange.response, anthropicPassThrough) });
    return;
  }
  try {
    // The key first: a caller without one learns nothing about the body.
    const caller = gateway.authenticate(exchange.headers);
    const translated = messagesToChat(exchange.body, counting);
    const chat = Buffer.from(JSON.stringify(translated.chat));
    if (counting) {
      const text = JSON.stringify({ input_tokens: gateway.countPromptTokens(caller, chat) });
      exchange.response.writeHead(200, { "content-type": "application/json", "content-length": String(Buffer.byteLength(text)), "x-request-id": exchange.id });
      exchange.response.end(text);
      return;
    }
    gateway.metrics.apiModes.inc({ api: "messages", mode: "translated" });
    const inputTokens = translated.chat.stream === true ? promptTokensOrNone(gateway, caller, chat) : 0;
    void gateway.handle("chat/completions", { ...exchange, body: chat, response: new TranslatingResponse(exchange.response, messagesTranslator(translated, inputTokens)) });
  } catch (error) {
    writeOpenAIError(refusals, exchange.id, openAIErrorAnswer(error, exchange.id));
  }
}

/** The prompt's count for a stream's message_start; 0 where the request is refused (the request path then refuses it, and records the refusal). */
function promptTokensOrNone(gateway: Gateway, caller: GatewayCaller, chat: Buffer): number {
  try {
    return gateway.countPromptTokens(caller, chat);
  } catch {
    return 0;
  }
}

/**
 * POST /v1/responses: passed through to a model whose engine serves it
 * (vLLM, SGLang, an external provider), translated to a chat completion and
 * back for one whose engine does not (llama.cpp, TensorRT-LLM). A name the
 * gateway does not know goes the usual way, to be refused there.
 */
export function answerResponses(gateway: Gateway, exchange: GatewayExchange): void {
  if (!needsTranslation(gateway, exchange.body)) {
    gateway.metrics.apiModes.inc({ api: "responses", mode: "native" });
    void gateway.handle("responses", exchange);
    return;
  }
  try {
    gateway.authenticate(exchange.headers);
    const translated = responsesToChat(exchange.body);
    gateway.metrics.apiModes.inc({ api: "responses", mode: "translated" });
    void gateway.handle("chat/completions", { ...exchange, body: Buffer.from(JSON.stringify(translated.chat)), response: new TranslatingResponse(exchange.response, responsesTranslator(translated.request)) });
  } catch (error) {
    writeOpenAIError(exchange.response, exchange.id, openAIErrorAnswer(error, exchange.id));
  }
}

/** True for a model on an engine without /v1/responses; external models are the provider's to serve, pooling and ComfyUI models the usual path's to refuse. */
function needsTranslation(gateway: Gateway, raw: Buffer): boolean {
  const model = modelNamedIn(gateway, raw);
  if (model === undefined || model.engine === null || model.comfy || model.pooling !== undefined) return false;
  return !engineServes(model.engine, "responses");
}

/**
 * True when the model asked for and each of its fallbacks answer Anthropic's
 * Messages themselves: every replica each has now serves it (a model still
 * without one, when its engine's replicas all do). One that would need the
 * translation makes the whole request translated, so no fallback is lost.
 * External models (a provider's OpenAI API), pooling and ComfyUI models, and
 * names the table does not know are translated: the translation refuses or
 * answers them as before.
 */
function passesMessagesThrough(gateway: Gateway, raw: Buffer): boolean {
  const model = modelNamedIn(gateway, raw);
  if (model === undefined || !servesMessagesNow(model)) return false;
  return model.fallbacks.every((name) => {
    const fallback = gateway.state.current.model(name);
    return fallback === undefined || servesMessagesNow(fallback);
  });
}

function servesMessagesNow(model: RoutingModel): boolean {
  if (model.engine === null || model.external || model.comfy || model.pooling !== undefined) return false;
  if (model.replicas.length === 0) return replicaServesMessages(model.engine, null);
  return model.replicas.every((replica) => replica.serves_messages === true);
}

/** The model the body names, as the table in force resolves it; undefined for a body that is not JSON or names none the table knows. */
function modelNamedIn(gateway: Gateway, raw: Buffer): RoutingModel | undefined {
  let name: unknown;
  try {
    name = (JSON.parse(raw.toString("utf8")) as { model?: unknown } | null)?.model;
  } catch {
    return undefined;
  }
  return typeof name === "string" ? gateway.state.current.resolve(name)?.model : undefined;
}
