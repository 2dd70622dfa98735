import { DomainError } from "../../errors/light.js";
import type { ExtraRoute } from "../../protocol/index.js";
import type { GatewayBody } from "../wire/prompt-text.js";

/** A body of /v1/responses, /v1/messages (passed through), /v1/rerank or /v1/score as the gateway reads it: what routing and limits need, the rest passed through. */
export interface ExtraBody {
  /**
   * The body for routing and the upstream. Its `input` (a Responses API
   * input: a string or a list of items) is not the prompt of the classic
   * routes; nothing reads it as one, it is passed through as the client sent it.
   */
  readonly body: GatewayBody;
  /** The text the prompt's tokens are estimated from. */
  readonly promptText: string;
  /** max_output_tokens of a Responses request, max_tokens of a Messages request. */
  readonly maxTokens: number | undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function refuse(at: string, problem: string, hint = "Send the body this route takes, as OpenAI's (or vLLM's, for rerank and score) API documents it."): never {
  throw new DomainError("invalid_input", `body ${at}: ${problem}`, hint, [{ where: at, message: problem }]);
}

/** The text of a Responses input item's content: a string, or parts of which the text ones count. */
function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((part) => (isObject(part) && typeof part.text === "string" ? part.text : "")).join(" ");
}

const anthropicHint = "Send the body Anthropic's Messages API takes.";

function texts(value: unknown, at: string): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value) && value.length > 0 && value.every((item) => typeof item === "string")) return value as string[];
  return refuse(at, "required: a string or a non-empty array of strings");
}

/**
 * Reads and checks the body of one of the routes beyond chat, completions
 * and embeddings. Like readGatewayBody it checks only what the gateway needs
 * and what would otherwise reach an engine that refuses it in its own shape.
 */
export function readExtraBody(raw: Buffer, route: ExtraRoute): ExtraBody {
  let json: unknown;
  try {
    json = JSON.parse(raw.toString("utf8"));
  } catch {
    throw new DomainError("invalid_input", "the request body is not JSON", "Send a JSON body, as OpenAI's API takes it, with content-type: application/json.");
  }
  if (!isObject(json)) throw new DomainError("invalid_input", "body: expected a JSON object", "Send the body OpenAI's API takes for this route.");
  if (typeof json.model !== "string" || json.model.length === 0) refuse("model", "required: the model to use, as GET /v1/models lists it");
  if (json.stream !== undefined && json.stream !== null && typeof json.stream !== "boolean") refuse("stream", "expected a boolean or null");
  const body = json as GatewayBody;
  switch (route) {
    case "responses": {
      const input = json.input;
      let promptText: string;
      if (typeof input === "string") promptText = input;
      else if (Array.isArray(input) && input.every(isObject)) promptText = input.map((item) => contentText(item.content)).join("\n");
      else refuse("input", "required: a string, or an array of input items ({role, content})");
      if (json.instructions !== undefined && json.instructions !== null && typeof json.instructions !== "string") refuse("instructions", "expected a string or null");
      const maxTokens = json.max_output_tokens;
      if (maxTokens !== undefined && maxTokens !== null && !(typeof maxTokens === "number" && Number.isSafeInteger(maxTokens) && maxTokens >= 1)) {
        refuse("max_output_tokens", "expected a whole number of at least 1, or null");
      }
      const instructions = typeof json.instructions === "string" ? `${json.instructions}\n` : "";
      return { body, promptText: instructions + promptText, maxTokens: typeof maxTokens === "number" ? maxTokens : undefined };
    }
    case "messages": {
      // Only what routing and limits need: the engine that serves the route checks the rest in Anthropic's terms.
      const messages = json.messages;
      if (!Array.isArray(messages) || !messages.every(isObject)) refuse("messages", "required: an array of messages ({role, content})", anthropicHint);
      const maxTokens = json.max_tokens;
      if (!(typeof maxTokens === "number" && Number.isSafeInteger(maxTokens) && maxTokens >= 1)) refuse("max_tokens", "required: a whole number of at least 1", anthropicHint);
      const system = typeof json.system === "string" ? [json.system] : Array.isArray(json.system) ? [contentText(json.system)] : [];
      return { body, promptText: [...system, ...messages.map((message) => contentText(message.content))].join("\n"), maxTokens };
    }
    case "rerank": {
      if (typeof json.query !== "string") refuse("query", "required: the text the documents are ranked against");
      const documents = json.documents;
      if (!Array.isArray(documents) || documents.length === 0) refuse("documents", "required: a non-empty array of the texts to rank");
      const documentTexts = documents.map((document, index) => {
        if (typeof document === "string") return document;
        if (isObject(document) && typeof document.text === "string") return document.text;
        return refuse(`documents.${index}`, "expected a string, or an object with a text");
      });
      const topN = json.top_n;
      if (topN !== undefined && topN !== null && !(typeof topN === "number" && Number.isSafeInteger(topN) && topN >= 0)) refuse("top_n", "expected a whole number of at least 0, or null");
      return { body, promptText: [json.query, ...documentTexts].join("\n"), maxTokens: undefined };
    }
    case "score": {
      const first = texts(json.text_1, "text_1");
      const second = texts(json.text_2, "text_2");
      if (first.length > 1 && first.length !== second.length) refuse("text_2", `expected as many texts as text_1 (${first.length}), or text_1 a single text`);
      return { body, promptText: [...first, ...second].join("\n"), maxTokens: undefined };
    }
  }
}
