import type { V1Response } from "./v1-response.js";
import type { OpenAIErrorAnswer } from "./openai-error-body.js";

/**
 * Writes an error answer in OpenAI's shape on a raw response. Once an
 * answer's headers have left, a clean error can no longer be told apart from
 * it, so the connection is cut instead: the client sees a failure, never a
 * truncated answer that looks whole.
 */
export function writeOpenAIError(response: V1Response, requestId: string, answer: OpenAIErrorAnswer): void {
  if (response.headersSent) {
    response.destroy();
    return;
  }
  const text = JSON.stringify(answer.body);
  response.writeHead(answer.status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": String(Buffer.byteLength(text)),
    "x-request-id": requestId,
    ...(answer.retryAfterSeconds !== undefined ? { "retry-after": String(answer.retryAfterSeconds) } : {}),
  });
  response.end(text);
}
