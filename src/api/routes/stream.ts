import type { FastifyInstance } from "fastify";
import type { OutgoingHttpHeaders } from "node:http";
import type { ChangeFeed } from "../../services/change-feed.js";

/** What one stream may have waiting in its socket before it counts as too slow and is closed: about a thousand messages. */
export const maxBufferedStreamBytes = 256 * 1024;

/** The client waits this long before it reconnects after the stream ends. */
const retryMs = 2000;

/**
 * `GET /api/v1/stream`: server-sent events telling which collections
 * changed (`event: models`, `data: {"revision": 3}`), so a page refetches
 * only what changed instead of polling every list. Authorised like any read
 * route, with the bearer header (a fetch stream, so no token in a URL).
 */
export function registerStreamRoutes(app: FastifyInstance, feed: ChangeFeed): void {
  app.get("/api/v1/stream", { config: { access: "read", api: { summary: "Server-sent events naming each collection that changed (nodes, models, replicas, events, keys, canaries, audit)", produces: "text/event-stream" } } }, (request, reply) => {
    const socket = request.raw.socket;
    const audience = request.audience;
    let started = false;
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      if (started) reply.raw.end();
    };
    // Refused past the cap before anything is written, in the API's error shape.
    const unsubscribe = feed.subscribe({
      audience,
      send(chunk) {
        if (ended || !started) return !ended;
        if (reply.raw.writableLength > maxBufferedStreamBytes) {
          // Dropped rather than buffered without end: it reconnects and refetches what it missed.
          ended = true;
          reply.raw.destroy();
          return false;
        }
        reply.raw.write(chunk);
        return true;
      },
      close: end,
    });
    reply.raw.on("close", () => {
      ended = true;
      unsubscribe();
    });
    // The hook-set headers (the version headers) go out with the stream's own.
    const headers: OutgoingHttpHeaders = {
      ...(reply.getHeaders() as OutgoingHttpHeaders),
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache, no-transform",
      "x-accel-buffering": "no",
      // A stream's connection is never reused: when the stream ends, so does the socket, and a closing server waits on nothing.
      connection: "close",
    };
    reply.hijack();
    socket.setNoDelay(true);
    // An idle stream is not a stuck request: the ping keeps it alive, the server's timeout must not close it.
    socket.setTimeout(0);
    reply.raw.writeHead(200, headers);
    reply.raw.write(`retry: ${retryMs}\n\n`);
    started = true;
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- the close handler sets it while the head is written
    if (ended) reply.raw.end();
  });
}
