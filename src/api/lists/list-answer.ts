import { createHash } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import { redactStrings, type Audience } from "../../catalog/redact.js";
import { isPaged, pageOf, type PageQuery } from "./list-query.js";

/**
 * A weak validator for a list answer, from what it was built from (the
 * revisions in force and the query), so an unchanged list costs a hash and a
 * 304 rather than the body. Weak: the same list may be serialized with other
 * whitespace by another server.
 */
export function weakEtag(...parts: readonly string[]): string {
  return `W/"${createHash("sha1").update(parts.join("\u0000")).digest("base64url")}"`;
}

function matchesEtag(header: string | string[] | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const weak = (tag: string) => tag.trim().replace(/^W\//, "");
  return [header].flat().flatMap((value) => value.split(",")).some((tag) => tag.trim() === "*" || weak(tag) === weak(etag));
}

/**
 * JSON through the masking net every object answer passes (URL passwords
 * always, env values for read tokens): a list sent as text skips fastify's
 * preSerialization hook, so it is masked here, once per build for the kept
 * lists.
 */
export function maskedJson(value: unknown, audience: Audience): string {
  return JSON.stringify(redactStrings(value, audience));
}

/** Answers 304 when the caller holds this version already, and the JSON (text or bytes) otherwise, with its ETag either way. */
export function sendList(request: FastifyRequest, reply: FastifyReply, etag: string, body: () => string | Buffer): FastifyReply {
  reply.header("etag", etag);
  if (matchesEtag(request.headers["if-none-match"], etag)) return reply.status(304).send();
  return reply.type("application/json; charset=utf-8").send(body());
}

/**
 * Answers built once per key (catalog and fleet revisions, audience) and
 * kept while the key stands: at 2,000 models, building and serializing the
 * list was most of a `GET`. A few keys are kept (one per audience, and the
 * one before a change while readers move on); builds of one key are shared.
 */
export class ListCache<Value> {
  readonly #entries = new Map<string, { readonly value: Promise<Value>; readonly validUntilMs: number }>();

  constructor(
    private readonly size = 4,
    private readonly now: () => number = Date.now,
  ) {}

  /** `build` answers the value and until when it holds (Infinity: until the key changes). */
  async get(key: string, build: () => Promise<{ value: Value; validUntilMs?: number }>): Promise<Value> {
    const hit = this.#entries.get(key);
    if (hit && hit.validUntilMs > this.now()) return await hit.value;
    const built = build();
    const value = built.then((result) => result.value);
    const entry = { value, validUntilMs: Number.POSITIVE_INFINITY };
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    while (this.#entries.size > this.size) this.#entries.delete(this.#entries.keys().next().value as string);
    try {
      const result = await built;
      if (this.#entries.get(key) === entry) this.#entries.set(key, { value, validUntilMs: result.validUntilMs ?? Number.POSITIVE_INFINITY });
      return result.value;
    } catch (error) {
      if (this.#entries.get(key) === entry) this.#entries.delete(key);
      throw error;
    }
  }
}

/**
 * A list read whole from the store at each request (keys, usage), paged and
 * filtered here: its ETag comes from what it holds, so an unchanged list
 * still costs the read but not the transfer.
 */
export function sendItems<Item>(
  request: FastifyRequest,
  reply: FastifyReply,
  list: { readonly field: string; readonly items: readonly Item[]; readonly key: (item: Item) => string; readonly query: PageQuery; readonly around?: Record<string, unknown> },
): FastifyReply {
  const paged = isPaged(list.query);
  const page = paged ? pageOf(list.items, list.key, list.query) : { items: list.items, next_cursor: null };
  const items = maskedJson(page.items, request.audience);
  const etag = weakEtag(JSON.stringify(list.query), request.audience, items, String(page.next_cursor));
  return sendList(request, reply, etag, () => maskedJson({ ...list.around, [list.field]: page.items, ...(paged ? { next_cursor: page.next_cursor } : {}) }, request.audience));
}
