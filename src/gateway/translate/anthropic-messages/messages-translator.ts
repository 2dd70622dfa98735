import type { AnswerTranslator } from "../translating-response.js";
import { anthropicErrorFromOpenAI } from "./anthropic-error.js";
import { chatToMessage } from "./messages-answer.js";
import { MessagesStream } from "./messages-stream.js";
import type { TranslatedMessages } from "./messages-request.js";

/**
 * Chat completion answers to one Messages request, as Anthropic's.
 * `inputTokens` is the prompt's count as the gateway counted it, for
 * message_start, which leaves before the engine reports its own.
 */
export function messagesTranslator(request: Pick<TranslatedMessages, "model" | "stopSequences">, inputTokens = 0): AnswerTranslator {
  const stream = new MessagesStream(request.model, request.stopSequences, inputTokens);
  return {
    json: (text) => JSON.stringify(chatToMessage(text, request.stopSequences, request.model)),
    error: (status, text) => JSON.stringify(anthropicErrorFromOpenAI(status, text)),
    event: (data) => stream.event(data),
    end: () => stream.end(),
  };
}

/** Only errors translated: for a Messages request refused before any engine answered (an unreadable body, a count). */
export const anthropicErrorsOnly: AnswerTranslator = {
  json: (text) => text,
  error: (status, text) => JSON.stringify(anthropicErrorFromOpenAI(status, text)),
  event: (data) => `data: ${data}\n\n`,
  end: () => "",
};

/** For a Messages request passed through to an engine that serves the API: its answers are Anthropic's already, only the gateway's and an engine's OpenAI-shaped errors are not. */
export const anthropicPassThrough: AnswerTranslator = {
  json: (text) => text,
  error: (status, text) => JSON.stringify(anthropicErrorFromOpenAI(status, text)),
  end: () => "",
};
