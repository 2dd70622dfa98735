import type { IncomingHttpHeaders } from "node:http";
import type { GatewayEndpoint } from "../wire/gateway-exchange.js";
import { headerName, isHeaderValue } from "../wire/header-name.js";
import { frontRequestLines } from "./v1-routes.js";

/** A request the front answers itself: one of the OpenAI POST routes the route table gives the front (v1-routes.ts), with a body of known length. */
export interface FrontRequest {
  readonly endpoint: GatewayEndpoint;
  readonly headers: IncomingHttpHeaders;
  /** Where the body starts in the bytes read, and how long it is. */
  readonly bodyStart: number;
  readonly bodyLength: number;
  readonly keepAlive: boolean;
}

/**
 * What the bytes at `start` are: "incomplete" until the head has ended,
 * a FrontRequest when the front can answer it, "head-too-large" for a head
 * (ended or not) past `maxHeadBytes`, whatever it asks, "other" for anything else.
 * "other" is not a refusal: the connection goes to node's HTTP server, which
 * answers every request it can and refuses the rest as it always has. So
 * this reads strictly and accepts only what it fully understands: an
 * HTTP/1.1 POST to a route the table gives the front (/v1/chat/completions,
 * /v1/completions, /v1/embeddings) with one content-length, a host, no
 * transfer coding, no Expect or Upgrade, no header twice and no control
 * character, and a body of at most `maxBodyBytes`. The head's limit is the front's own to refuse: node's
 * parser counts only some of a head's bytes (names and values, not the
 * separators), so a head past the limit handed to it could be read whole.
 */
export function readFrontRequest(bytes: Buffer, start: number, limits: { maxHeadBytes: number; maxBodyBytes: number }): FrontRequest | "incomplete" | "head-too-large" | "other" {
  const end = bytes.indexOf(headEnd, start);
  if (end < 0) return bytes.length - start > limits.maxHeadBytes ? "head-too-large" : "incomplete";
  if (end - start > limits.maxHeadBytes) return "head-too-large";
  const head = bytes.toString("latin1", start, end);
  const lineEnd = head.indexOf("\r\n");
  const endpoint = frontRequestLines.get(lineEnd < 0 ? head : head.slice(0, lineEnd));
  if (endpoint === undefined) return "other";
  const headers: IncomingHttpHeaders = {};
  let length: number | undefined;
  let keepAlive = true;
  let at = lineEnd;
  while (at >= 0) {
    const next = head.indexOf("\r\n", at + 2);
    const line = next < 0 ? head.slice(at + 2) : head.slice(at + 2, next);
    at = next;
    const colon = line.indexOf(":");
    if (colon <= 0) return "other";
    const rawName = line.slice(0, colon);
    const name = headerName(rawName);
    if (name === undefined) return "other";
    const value = trimSpaceAndTab(line, colon + 1);
    if (!isHeaderValue(value)) return "other";
    if (headers[name] !== undefined || refusedHeaders.has(name)) return "other";
    headers[name] = value;
    if (name === "content-length") {
      // Read as node's parser reads it, which takes spaces and tabs before the digits but only spaces after: a length node refuses must not frame a body here.
      if (!contentLength.test(line.slice(colon + 1))) return "other";
      length = Number(value);
    } else if (name === "connection") {
      const options = value.toLowerCase();
      if (options.includes("upgrade")) return "other";
      keepAlive = !options.includes("close");
    }
  }
  if (length === undefined || length > limits.maxBodyBytes || headers.host === undefined) return "other";
  return { endpoint, headers, bodyStart: end + 4, bodyLength: length, keepAlive };
}

/** The value after the colon, without the spaces and tabs around it (and nothing else: other white space is the value's own). */
function trimSpaceAndTab(line: string, from: number): string {
  let first = from;
  let last = line.length;
  while (first < last && (line.charCodeAt(first) === 0x20 || line.charCodeAt(first) === 0x09)) first += 1;
  while (last > first && (line.charCodeAt(last - 1) === 0x20 || line.charCodeAt(last - 1) === 0x09)) last -= 1;
  return line.slice(first, last);
}

const headEnd = Buffer.from("\r\n\r\n");

/** A content-length as it stands after the colon: at most ten digits (a body the limit could take), with the white space node's parser allows around them. */
const contentLength = /^[ \t]*\d{1,10} *$/;

/** Headers whose meaning the front does not take on: a body in chunks, 100-continue, a protocol switch. */
const refusedHeaders = new Set(["transfer-encoding", "expect", "upgrade"]);
