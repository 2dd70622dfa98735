import { DomainError } from "../../errors/light.js";
import type { GatewayEndpoint } from "../wire/gateway-exchange.js";
import type { GatewayBody } from "../wire/prompt-text.js";

/**
 * A /v1 body as the gateway reads it, checked by hand: it accepts exactly
 * what gatewayBodySchema accepts (a test holds the two together), at a
 * fraction of zod's cost on the one path every request takes. Only the
 * fields routing and limits need are checked; every other field goes to the
 * engine as the client sent it, and the engine judges it.
 */
export function readGatewayBody(raw: Buffer): GatewayBody {
  let json: unknown;
  try {
    json = JSON.parse(raw.toString("utf8"));
  } catch {
    throw new DomainError("invalid_input", "the request body is not JSON", "Send a JSON body, as OpenAI's API takes it, with content-type: application/json.");
  }
  if (!isObject(json)) refuse("(top level)", "expected a JSON object");
  const model = json.model;
  if (typeof model !== "string") refuse("model", "required: the model to use, as GET /v1/models lists it");
  if (model.length === 0) refuse("model", "must not be empty: the model to use, as GET /v1/models lists it");
  optionalOf("stream", json.stream, "a boolean", (value) => typeof value === "boolean");
  const streamOptions = json.stream_options;
  if (streamOptions !== undefined && streamOptions !== null) {
    if (!isObject(streamOptions)) refuse("stream_options", "expected an object");
    optionalOf("stream_options.include_usage", streamOptions.include_usage, "a boolean", (value) => typeof value === "boolean");
  }
  optionalOf("max_tokens", json.max_tokens, "a whole number of at least 0", isCount);
  optionalOf("max_completion_tokens", json.max_completion_tokens, "a whole number of at least 0", isCount);
  const messages = json.messages;
  if (messages !== undefined) {
    if (!Array.isArray(messages)) refuse("messages", "expected an array of messages");
    for (const [index, message] of messages.entries()) checkMessage(message, `messages.${index}`);
  }
  if (json.prompt !== undefined) checkPrompt(json.prompt, "prompt");
  if (json.input !== undefined) checkPrompt(json.input, "input");
  return json as GatewayBody;
}

/**
 * What OpenAI's API requires of each route, checked before any engine sees
 * the body: an engine refuses these in its own shape, which the client's
 * error classes do not read. Only fields readGatewayBody already typed.
 */
export function requireEndpointFields(body: GatewayBody, endpoint: GatewayEndpoint): void {
  if (endpoint === "chat/completions") {
    if (body.messages === undefined) refuse("messages", "required: the conversation, an array of at least one message");
    if (body.messages.length === 0) refuse("messages", "must hold at least one message");
  }
  if (endpoint === "completions" && body.prompt === undefined) refuse("prompt", "required: the text to complete");
  if (endpoint === "embeddings" && body.input === undefined) refuse("input", "required: the text to embed");
  if (endpoint === "embeddings") return;
  if (body.max_tokens === 0) refuse("max_tokens", "must be at least 1");
  if (body.max_completion_tokens === 0) refuse("max_completion_tokens", "must be at least 1");
}

function checkMessage(message: unknown, at: string): void {
  if (!isObject(message)) refuse(at, "expected a message object");
  if (typeof message.role !== "string") refuse(`${at}.role`, "expected a string");
  const content = message.content;
  if (content === undefined || content === null || typeof content === "string") return;
  if (!Array.isArray(content)) refuse(`${at}.content`, "expected a string, an array of content parts, or null");
  for (const [index, part] of content.entries()) {
    if (!isObject(part)) refuse(`${at}.content.${index}`, "expected a content part object");
    if (part.type !== undefined && typeof part.type !== "string") refuse(`${at}.content.${index}.type`, "expected a string");
    if (part.text !== undefined && typeof part.text !== "string") refuse(`${at}.content.${index}.text`, "expected a string");
  }
}

/** A prompt or input: a string, or an array of strings, of token ids, or of token id arrays. */
function checkPrompt(prompt: unknown, at: string): void {
  if (typeof prompt === "string") return;
  const expected = "expected a string, an array of strings, an array of token ids, or an array of token id arrays";
  if (!Array.isArray(prompt)) refuse(at, expected);
  if (prompt.every((item) => typeof item === "string")) return;
  if (prompt.every((item) => typeof item === "number")) return;
  if (prompt.every((item) => Array.isArray(item) && item.every((id) => typeof id === "number"))) return;
  refuse(at, expected);
}

function optionalOf(at: string, value: unknown, expected: string, accepts: (value: unknown) => boolean): void {
  if (value === undefined || value === null || accepts(value)) return;
  refuse(at, `expected ${expected} or null`);
}

function isCount(value: unknown): boolean {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The field goes in the error's details: OpenAI's shape names it as `param`. */
function refuse(at: string, problem: string): never {
  const where = at === "(top level)" ? [] : [{ where: at, message: problem }];
  throw new DomainError("invalid_input", `body ${at}: ${problem}`, "Send the body OpenAI's API takes for this route.", where);
}
