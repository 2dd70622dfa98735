import { STATUS_CODES } from "node:http";
import { DomainError } from "../../errors/light.js";
import { formatBytes } from "../../catalog/index.js";
import { statusForCode, softwareVersion, versionHeader } from "../../protocol/index.js";
import { openAIErrorAnswer } from "../wire/openai-error-body.js";

const requestLine = /^[A-Z]+ (\/\S*)/;

/** The 408 that ends a connection too slow to send its request. */
export function requestTimeoutAnswer(headSoFar: string, limitMs: number): string {
  const error = new DomainError(
    "request_timeout",
    `the request was not received in full within ${Math.round(limitMs / 1000)} s`,
    "Send the request's head and body without pausing; a client on a slow network can retry.",
  );
  return frontRefusal(headSoFar, error);
}

/** The 431 that ends a connection whose request head is past limits.header_bytes. */
export function headTooLargeAnswer(headSoFar: string, limitBytes: number): string {
  const error = new DomainError(
    "headers_too_large",
    `the request line and headers are longer than this server reads (${formatBytes(limitBytes)} together)`,
    "Send shorter headers and a shorter path; the operator sets the limit as limits.header_bytes in server.yaml (--header-bytes for llmgw gateway).",
  );
  return frontRefusal(headSoFar, error);
}

/**
 * A refusal the front writes as raw bytes (there is no request object yet),
 * closing the connection after it: in OpenAI's error shape when the request
 * line so far names a /v1 path, in the API's own error body (with the
 * version header the CLI reads) otherwise, so either kind of client reads
 * why it was cut off.
 */
function frontRefusal(headSoFar: string, error: DomainError): string {
  const status = statusForCode[error.code];
  const path = requestLine.exec(headSoFar)?.[1];
  const onV1 = path !== undefined && (path === "/v1" || path.startsWith("/v1/") || path.startsWith("/v1?"));
  const body = JSON.stringify(onV1 ? openAIErrorAnswer(error, "none").body : error.toBody());
  const version = onV1 ? "" : `${versionHeader}: ${softwareVersion}\r\n`;
  return `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? "Error"}\r\nconnection: close\r\n${version}content-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}
