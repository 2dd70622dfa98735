/**
 * The token in an `Authorization: Bearer TOKEN` header, or undefined. One
 * reading for every llmgw server: the scheme in any case (RFC 7235 makes it
 * case-insensitive), any spaces around the token, and nothing else; a header
 * with two words after the scheme is no token at all.
 */
export function bearerToken(header: string | readonly string[] | undefined): string | undefined {
  if (typeof header !== "string") return undefined;
  const match = /^\s*Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}
