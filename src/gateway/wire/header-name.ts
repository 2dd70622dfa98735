/** A header name is a token (RFC 9110). */
const tokenName = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * The names sent on nearly every request and answer, as clients and engines
 * spell them, to their lower-case form: found with one lookup, without
 * lower-casing (and then interning) a new string per header.
 */
const knownNames: ReadonlyMap<string, string> = new Map(
  [
    "host",
    "content-length",
    "content-type",
    "authorization",
    "accept",
    "accept-encoding",
    "user-agent",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "date",
    "server",
    "cache-control",
    "retry-after",
    "x-request-id",
    "x-session-id",
  ].flatMap((name) => [
    [name, name],
    [name.replace(/(^|-)([a-z])/g, (_whole, dash: string, letter: string) => dash + letter.toUpperCase()), name],
  ]),
);

/** The header name in lower case, as node's own parser gives it; undefined when it is not a token. */
export function headerName(raw: string): string | undefined {
  const known = knownNames.get(raw);
  if (known !== undefined) return known;
  return tokenName.test(raw) ? raw.toLowerCase() : undefined;
}

/** A header value: visible characters, spaces and tabs, and obs-text; no line break or other control character. */
const headerValue = /^[\t\x20-\x7e\x80-\xff]*$/;

/**
 * True when `value` may stand in a header line as it is. A line break in a
 * value would end the head early and forge what follows (a second request,
 * or the rest of an answer).
 */
export function isHeaderValue(value: string): boolean {
  return headerValue.test(value);
}
