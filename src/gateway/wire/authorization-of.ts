import type { IncomingHttpHeaders } from "node:http";
import { headerText } from "./header-text.js";

/**
 * The caller's key as the policy reads it: `authorization: Bearer KEY`, as
 * OpenAI's clients send it, or `x-api-key: KEY`, as Anthropic's do. The
 * bearer wins when both come.
 */
export function authorizationOf(headers: IncomingHttpHeaders): string | undefined {
  const authorization = headerText(headers.authorization);
  if (authorization !== undefined) return authorization;
  const apiKey = headerText(headers["x-api-key"]);
  return apiKey === undefined || apiKey.trim() === "" ? undefined : `Bearer ${apiKey.trim()}`;
}
