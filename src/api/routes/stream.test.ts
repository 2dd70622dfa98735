import type { FastifyInstance } from "fastify";
import { request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { temporaryDirectory } from "../../../test/support/temporary-directory.js";
import { insertApiTokens } from "../../../test/support/api-tokens.js";
import { openStore, type Store } from "../../store/open-store.js";
import { insertEvents } from "../../store/reconcile-rows.js";
import { CatalogService } from "../../services/catalog-service.js";
import { buildApp } from "../../server/build-app.js";
import { streamChangeSchema } from "../../protocol/console.js";
import { storesUnderTest } from "../../../test/support/postgres.js";

interface SseMessage {
  readonly event: string | undefined;
  readonly data: string | undefined;
  readonly comment: string | undefined;
  readonly retry: string | undefined;
}

/** Reads an SSE body as a browser would: messages split on blank lines, fields by their names. */
class SseReader {
  readonly #queue: SseMessage[] = [];
  readonly #waiters: (() => void)[] = [];
  #buffer = "";
  ended = false;

  constructor(body: AsyncIterable<Buffer>) {
    void (async () => {
      try {
        for await (const chunk of body) {
          this.#buffer += chunk.toString("utf8");
          let end = this.#buffer.indexOf("\n\n");
          while (end >= 0) {
            this.#queue.push(parseMessage(this.#buffer.slice(0, end)));
            this.#buffer = this.#buffer.slice(end + 2);
            end = this.#buffer.indexOf("\n\n");
          }
          this.#wake();
        }
      } catch {
        // a destroyed body is an end like any other
      }
      this.ended = true;
      this.#wake();
    })();
  }

  #wake(): void {
    for (const waiter of this.#waiters.splice(0)) waiter();
  }

  /** The next message that matches, skipping others (pings, other topics). */
  async next(matches: (message: SseMessage) => boolean): Promise<SseMessage> {
    for (;;) {
      const index = this.#queue.findIndex(matches);
      if (index >= 0) {
        const [message] = this.#queue.splice(0, index + 1).slice(-1);
        return message as SseMessage;
      }
      if (this.ended) throw new Error("the stream ended before the message came");
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
  }
}

function parseMessage(text: string): SseMessage {
  const field = (name: string) => text.split("\n").find((line) => line.startsWith(`${name}: `))?.slice(name.length + 2);
  return { event: field("event"), data: field("data"), retry: field("retry"), comment: text.split("\n").find((line) => line.startsWith(": "))?.slice(2) };
}

describe.each(storesUnderTest)("GET /api/v1/stream over real HTTP, on $kind", (engine) => {
  let store: Store;
  let other: Store;
  let app: FastifyInstance;
  let otherApp: FastifyInstance;
  let base: string;
  let tokens: Awaited<ReturnType<typeof insertApiTokens>>;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    const place = await engine.location();
    drop = place.drop;
    store = await openStore(place.location);
    tokens = await insertApiTokens(store);
    const feed = { pollMs: 50, pingMs: 100 };
    app = await buildApp({ store, catalog: new CatalogService(store, [], "server.yaml"), adminTokenHint: "see admin-token", changeFeed: feed });
    // A second server on the same database, as several servers share Postgres.
    other = await openStore(place.location);
    otherApp = await buildApp({ store: other, catalog: new CatalogService(other, [], "server.yaml"), adminTokenHint: "see admin-token", changeFeed: { ...feed, maxSubscribers: 2 } });
    base = await app.listen({ host: "127.0.0.1", port: 0 });
    await otherApp.listen({ host: "127.0.0.1", port: 0 });
  });
  afterAll(async () => {
    await app.close();
    await otherApp.close();
    await store.close();
    await other.close();
    await drop();
  });

  const open = async (token: string) => {
    const answer = await request(`${base}/api/v1/stream`, { headers: tokens.as(token) });
    return { answer, reader: new SseReader(answer.body) };
  };

  it("tells of a change made through another server sharing the database, and of new events with their rows", async () => {
    const { answer, reader } = await open(tokens.reader);
    expect(answer.statusCode).toBe(200);
    expect(answer.headers["content-type"]).toContain("text/event-stream");
    expect((await reader.next(() => true)).retry).toBe("2000");
    // The first poll is the baseline; a ping after it says the stream is live and the baseline read.
    await reader.next((message) => message.comment === "ping");

    const created = await otherApp.inject({ method: "POST", url: "/api/v1/keys", headers: tokens.as(tokens.admin), payload: { name: "from-the-other-server" } });
    expect(created.statusCode).toBe(201);
    const keys = await reader.next((message) => message.event === "keys");
    expect(streamChangeSchema.parse(JSON.parse(keys.data ?? "")).revision).toBe(1);
    await reader.next((message) => message.event === "audit");

    await insertEvents(other.db, [{ at: new Date().toISOString(), kind: "replica-started", model: "qwen", replica: "r1", node: "gpu-1", message: "started on gpu-1 https://user:hunter2@mirror.example/x" }]);
    const events = await reader.next((message) => message.event === "events");
    const data = JSON.parse(events.data ?? "") as { revision: number; events: { kind: string; model: string; message: string }[] };
    expect(data.revision).toBe(1);
    expect(data.events.map((event) => [event.kind, event.model])).toEqual([["replica-started", "qwen"]]);
    // The stream passes the same masking net as every answer: no URL password.
    expect(data.events[0]?.message).not.toContain("hunter2");
    answer.body.destroy();
  });

  it("refuses a stream without a token, and past its cap with too_many_streams", async () => {
    const anonymous = await request(`${base}/api/v1/stream`);
    expect(anonymous.statusCode).toBe(401);
    expect(((await anonymous.body.json()) as { error: { code: string } }).error.code).toBe("unauthorized");

    // The other server allows two streams, and no test but this one opens any there.
    const otherBase = `http://127.0.0.1:${(otherApp.server.address() as { port: number }).port}`;
    const openOther = async () => {
      const answer = await request(`${otherBase}/api/v1/stream`, { headers: tokens.as(tokens.admin) });
      return { answer, reader: new SseReader(answer.body) };
    };
    const first = await openOther();
    const second = await openOther();
    await first.reader.next((message) => message.retry !== undefined);
    await second.reader.next((message) => message.retry !== undefined);
    const third = await request(`${otherBase}/api/v1/stream`, { headers: tokens.as(tokens.admin) });
    expect(third.statusCode).toBe(503);
    expect(((await third.body.json()) as { error: { code: string } }).error.code).toBe("too_many_streams");
    first.answer.body.destroy();
    second.answer.body.destroy();
  });

  it("ends open streams when the server closes, so it never waits on them", async () => {
    const dataDir = temporaryDirectory("llmgw-stream-close-");
    const closing = await openStore({ database: undefined, dataDir });
    const closingTokens = await insertApiTokens(closing);
    const closingApp = await buildApp({ store: closing, catalog: new CatalogService(closing, [], "server.yaml"), adminTokenHint: "x" });
    const address = await closingApp.listen({ host: "127.0.0.1", port: 0 });
    const answer = await request(`${address}/api/v1/stream`, { headers: closingTokens.as(closingTokens.reader) });
    const reader = new SseReader(answer.body);
    await reader.next((message) => message.retry !== undefined);
    await closingApp.close();
    await expect(reader.next(() => false)).rejects.toThrow("the stream ended");
    await closing.close();
  });
});
