import type { AnswerTranslator } from "../translating-response.js";
import { chatToResponse } from "./responses-answer.js";
import type { ResponsesRequest } from "./responses-request.js";
import { ResponsesStream } from "./responses-stream.js";

/** Chat completion answers to one Responses request, as the Responses API's; errors are OpenAI's shape already. */
export function responsesTranslator(request: ResponsesRequest): AnswerTranslator {
  const stream = new ResponsesStream(request);
  return {
    json: (text) => JSON.stringify(chatToResponse(text, request)),
    error: (_status, text) => renameLimitParam(text),
    event: (data) => stream.event(data),
    end: () => stream.end(),
  };
}

/** The chat completion's fields a limit refusal names, as the Responses API calls them. */
const responsesFields: Readonly<Record<string, string>> = { max_tokens: "max_output_tokens", messages: "input" };

function renameLimitParam(text: string): string {
  let body: { error?: { param?: unknown; message?: unknown } };
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    return text;
  }
  const param = body.error?.param;
  const renamed = typeof param === "string" ? responsesFields[param] : undefined;
  if (body.error === undefined || renamed === undefined || typeof param !== "string") return text;
  const message = typeof body.error.message === "string" ? body.error.message.replaceAll(param, renamed) : body.error.message;
  return JSON.stringify({ ...body, error: { ...body.error, param: renamed, message } });
}
