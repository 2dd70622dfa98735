import { createHash } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import { redactStrings, type Audience } from "../../catalog/index.js";
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
 * Answers built once per key (catalog and fleet revisions) and kept while
 * the key stands: at 2,000 models, building and serializing the list was
 * most of a `GET`. One answer is kept per slot (an audience: a read token's
 * answer masks what an admin's shows). Revisions only move forward, so a
 * new key replaces its slot's answer: at 5,000 models and 1,000 nodes each
 * answer is megabytes, and answers to revisions no reader will ask for
 * again were a tenth of the server's heap. A reader that read its key just
 * before a change gets a build of its own. Builds of one key are shared.
 */
export class ListCache<Value> {
  readonly #slots = new Map<string, { readonly key: string; readonly value: Promise<Value>; readonly validUntilMs: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  /** `build` answers the value and until when it holds (Infinity: until the key changes). */
  async get(slot: string, key: string, build: () => Promise<{ value: Value; validUntilMs?: number }>): Promise<Value> {
    const hit = this.#slots.get(slot);
    if (hit !== undefined && hit.key === key && hit.validUntilMs > this.now()) return await hit.value;
    const built = build();
    const value = built.then((result) => result.value);
    const entry = { key, value, validUntilMs: Number.POSITIVE_INFINITY };
    this.#slots.set(slot, entry);
    try {
      const result = await built;
      if (this.#slots.get(slot) === entry) this.#slots.set(slot, { key, value, validUntilMs: result.validUntilMs ?? Number.POSITIVE_INFINITY });
      return result.value;
    } catch (error) {
      if (this.#slots.get(slot) === entry) this.#slots.delete(slot);
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
