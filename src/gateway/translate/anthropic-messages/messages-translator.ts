import type { AnswerTranslator } from "../translating-response.js";
import { anthropicErrorFromOpenAI } from "./anthropic-error.js";
import { chatToMessage } from "./messages-answer.js";
import { MessagesStream } from "./messages-stream.js";
import type { TranslatedMessages } from "./messages-request.js";

/** Chat completion answers to one Messages request, as Anthropic's. */
export function messagesTranslator(request: Pick<TranslatedMessages, "model" | "stopSequences">): AnswerTranslator {
  const stream = new MessagesStream(request.model, request.stopSequences);
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
