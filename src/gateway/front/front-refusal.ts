import { DomainError } from "../../errors/domain-error.js";
import { openAIErrorAnswer } from "../wire/openai-error-body.js";

const requestLine = /^[A-Z]+ (\/\S*)/;

/**
 * The 408 that ends a connection too slow to send its request, as raw bytes
 * (there is no request object yet): in OpenAI's error shape when the request
 * line so far names a /v1 path, in the API's own error body otherwise, so
 * either kind of client reads why it was cut off.
 */
export function requestTimeoutAnswer(headSoFar: string, limitMs: number): string {
  const error = new DomainError(
    "request_timeout",
    `the request was not received in full within ${Math.round(limitMs / 1000)} s`,
    "Send the request's head and body without pausing; a client on a slow network can retry.",
  );
  const path = requestLine.exec(headSoFar)?.[1];
  const body = JSON.stringify(path !== undefined && (path === "/v1" || path.startsWith("/v1/")) ? openAIErrorAnswer(error, "none").body : error.toBody());
  return `HTTP/1.1 408 Request Timeout\r\nconnection: close\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}
