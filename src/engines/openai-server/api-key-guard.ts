import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { errorBody } from "./openai-error-body.js";

/** How an engine started with an API key guards its routes. */
export interface ApiKeyGuard {
  readonly apiKey: string;
  /**
   * The paths served without the key: health and metrics, which the agent
   * polls without it. Every other path needs the key, so a route added later
   * is guarded unless it is opened here on purpose.
   */
  isOpen(path: string): boolean;
  /** The 401's error type and message, in the words of the engine this one answers as. */
  readonly refusal: { readonly type: string; readonly message: string };
  log(line: string): void;
}

/**
 * Whether an Authorization header carries `key` as a bearer token. The
 * scheme's case does not matter (RFC 9110); the token is everything after
 * it, so a key with a space in it still matches, as llama-server takes it.
 * Both sides are hashed first, so the time taken does not depend on how much
 * of the key a guess got right, nor on its length.
 */
export function bearerKeyMatches(header: string | undefined, key: string): boolean {
  const given = /^Bearer\s+(.+)$/i.exec(header ?? "")?.[1]?.trim() ?? "";
  const digest = (text: string) => createHash("sha256").update(text).digest();
  return given !== "" && timingSafeEqual(digest(given), digest(key));
}

/** Refuses, with a 401 in OpenAI's shape, every request to a guarded path without the key. */
export function guardWithApiKey(server: FastifyInstance, guard: ApiKeyGuard): void {
  server.addHook("onRequest", async (request, reply) => {
    const path = request.url.split("?")[0] ?? "";
    if (guard.isOpen(path) || bearerKeyMatches(request.headers.authorization, guard.apiKey)) return undefined;
    guard.log(`${request.method} ${path} status=401 (no valid API key)`);
    return reply.code(401).send(errorBody(401, guard.refusal.type, guard.refusal.message));
  });
}
