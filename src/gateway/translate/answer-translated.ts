import type { Gateway } from "../request/gateway.js";
import type { GatewayExchange } from "../wire/gateway-exchange.js";
import { openAIErrorAnswer } from "../wire/openai-error-body.js";
import { writeOpenAIError } from "../wire/write-openai-error.js";
import { engineServes } from "../../protocol/engine-routes.js";
import { TranslatingResponse } from "./translating-response.js";
import { messagesToChat } from "./anthropic-messages/messages-request.js";
import { anthropicErrorsOnly, messagesTranslator } from "./anthropic-messages/messages-translator.js";
import { responsesToChat } from "./responses/responses-request.js";
import { responsesTranslator } from "./responses/responses-translator.js";

/**
 * POST /v1/messages and /v1/messages/count_tokens (Anthropic's Messages
 * API). A message is translated to a chat completion and answered by the
 * gateway's one request path (keys, scopes, limits, usage, retries,
 * fallbacks and canaries as for any chat completion), its answer translated
 * back as it is written. Every error on these routes is in Anthropic's shape.
 */
export function answerMessages(gateway: Gateway, exchange: GatewayExchange, counting: boolean): void {
  const refusals = new TranslatingResponse(exchange.response, anthropicErrorsOnly);
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
    void gateway.handle("chat/completions", { ...exchange, body: chat, response: new TranslatingResponse(exchange.response, messagesTranslator(translated)) });
  } catch (error) {
    writeOpenAIError(refusals, exchange.id, openAIErrorAnswer(error, exchange.id));
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
    void gateway.handle("responses", exchange);
    return;
  }
  try {
    gateway.authenticate(exchange.headers);
    const translated = responsesToChat(exchange.body);
    void gateway.handle("chat/completions", { ...exchange, body: Buffer.from(JSON.stringify(translated.chat)), response: new TranslatingResponse(exchange.response, responsesTranslator(translated.request)) });
  } catch (error) {
    writeOpenAIError(exchange.response, exchange.id, openAIErrorAnswer(error, exchange.id));
  }
}

/** True for a model on an engine without /v1/responses; external models are the provider's to serve, pooling and ComfyUI models the usual path's to refuse. */
function needsTranslation(gateway: Gateway, raw: Buffer): boolean {
  let name: unknown;
  try {
    name = (JSON.parse(raw.toString("utf8")) as { model?: unknown } | null)?.model;
  } catch {
    return false;
  }
  if (typeof name !== "string") return false;
  const model = gateway.state.current.resolve(name)?.model;
  if (model === undefined || model.engine === null || model.comfy || model.pooling !== undefined) return false;
  return !engineServes(model.engine, "responses");
}
