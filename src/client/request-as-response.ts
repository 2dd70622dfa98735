import { Readable } from "node:stream";
import type { Dispatcher } from "undici";

/**
 * The Fetch standard refuses to reach some ports (the browsers' port
 * blocking: 9, 25, 6000, 6665–6669, 10080 and others), and Node's fetch
 * follows it, answering "bad port". A server may well listen on one of them,
 * and curl reaches it there; ctl must too.
 */
export function isBadPortRefusal(error: unknown): boolean {
  return error instanceof TypeError && error.cause instanceof Error && error.cause.message === "bad port";
}

/** The same request through undici's own client, which has no port blocking, answered as fetch would answer it. */
export async function requestAsResponse(url: URL, init: RequestInit, dispatcher: Dispatcher | undefined): Promise<Response> {
  const { request } = await import("undici");
  const answer = await request(url, {
    method: (init.method ?? "GET") as Dispatcher.HttpMethod,
    headers: init.headers as Record<string, string>,
    ...(typeof init.body === "string" ? { body: init.body } : {}),
    ...(init.signal ? { signal: init.signal } : {}),
    ...(dispatcher ? { dispatcher } : {}),
  });
  const headers = new Headers();
  for (const [name, value] of Object.entries(answer.headers)) {
    if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(", ") : value);
  }
  // A Response may not carry a body with these statuses.
  if (answer.statusCode === 204 || answer.statusCode === 304) {
    await answer.body.dump();
    return new Response(null, { status: answer.statusCode, headers });
  }
  return new Response(Readable.toWeb(answer.body) as ReadableStream<Uint8Array>, { status: answer.statusCode, headers });
}
