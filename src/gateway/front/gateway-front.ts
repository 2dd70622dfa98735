import type { Server } from "node:http";
import type { Socket } from "node:net";
import type { Gateway } from "../request/gateway.js";
import type { GatewayLog } from "../wire/gateway-exchange.js";
import { readFrontRequest, type FrontRequest } from "./front-request-head.js";
import { FrontResponse, type FrontResponseOwner } from "./front-response.js";
import { requestIdFrom } from "./request-id-from.js";
import { headTooLargeAnswer, requestTimeoutAnswer } from "./front-refusal.js";
import type { ServerLimits } from "../../catalog/index.js";

export interface GatewayFrontOptions {
  readonly gateway: Gateway;
  readonly log: GatewayLog;
  /** node's server on the same port: every connection whose request the front does not answer goes to it. */
  readonly server: Server;
  /** How the server itself hands a connection to its HTTP parser (its "connection" listener). */
  readonly handOff: (socket: Socket) => void;
  /** The port's limits: the head and body sizes are read from here, the timeouts from `server` (which the factory set from them). */
  readonly limits: Pick<ServerLimits, "headerBytes" | "bodyBytes" | "headerTimeoutMs" | "idleTimeoutMs">;
}

/**
 * The first reader of every connection to a gateway's port. The requests
 * every client sends on every call, a POST to /v1/chat/completions,
 * /v1/completions or /v1/embeddings, are read and answered here straight on
 * the socket (readFrontRequest, FrontResponse); node's HTTP server, with its
 * request and response streams and events, cost about as much per request as
 * the proxying itself. Anything else (GET /v1/models, the admin API, a body
 * in chunks, Expect: 100-continue, a malformed request) hands the connection
 * with the bytes already read to node's server, which keeps it from then on
 * and answers exactly as it would have.
 *
 * The server's own limits hold here too: a head past limits.header_bytes is
 * answered 431 (whichever route it asks for), a body past limits.body_bytes
 * goes to node and is answered 413, a head or body not sent within
 * headersTimeout / requestTimeout is answered 408, an idle kept-alive
 * connection is closed after keepAliveTimeout.
 */
export class GatewayFront {
  readonly #connections = new Set<FrontConnection>();
  readonly #sweep: NodeJS.Timeout;
  #closing = false;

  constructor(readonly options: GatewayFrontOptions) {
    // One timer for every connection, not one per request; a quarter of the shortest timeout, so none is overshot by more than a quarter.
    const { headerTimeoutMs, idleTimeoutMs } = options.limits;
    const every = Math.max(minSweepMs, Math.min(maxSweepMs, Math.floor(Math.min(headerTimeoutMs, idleTimeoutMs) / 4)));
    this.#sweep = setInterval(() => this.#expire(Date.now()), every).unref();
  }

  accept(socket: Socket): void {
    if (this.#closing) {
      this.options.handOff(socket);
      return;
    }
    const connection = new FrontConnection(this, socket);
    this.#connections.add(connection);
  }

  /** @internal */
  forget(connection: FrontConnection): void {
    this.#connections.delete(connection);
  }

  get closing(): boolean {
    return this.#closing;
  }

  /** Stops reading new requests: idle connections close now, busy ones once their answer has left. */
  close(): void {
    this.#closing = true;
    clearInterval(this.#sweep);
    for (const connection of this.#connections) connection.closeWhenIdle();
  }

  #expire(now: number): void {
    const { server } = this.options;
    for (const connection of this.#connections) connection.expire(now, server.keepAliveTimeout, server.headersTimeout, server.requestTimeout);
  }
}

/** How often the front looks for connections past their timeouts, at most and at least. */
const maxSweepMs = 1_000;
const minSweepMs = 25;

/** How long a refused client has to read the answer before its connection is destroyed. */
const refusalGraceMs = 2_000;

/** One client connection while the front reads it: one request at a time, the next read once the answer has left. */
class FrontConnection implements FrontResponseOwner {
  /** Bytes read and not yet used: the next request's, or more. */
  #chunks: Buffer[] = [];
  #length = 0;
  /** The current request's head, once read, while its body is still coming. */
  #pending: FrontRequest | undefined;
  #response: FrontResponse | undefined;
  /** When the current request's first byte came, or undefined between requests. */
  #requestStartedAt: number | undefined;
  #lastActiveAt = Date.now();
  #clientEnded = false;
  readonly #onData = (chunk: Buffer): void => this.#read(chunk);
  readonly #onDrain = (): void => void this.#response?.emit("drain");
  readonly #onEnd = (): void => {
    // The client will send nothing more: an answer under way still goes out, then the connection ends.
    this.#clientEnded = true;
    if (this.#response === undefined) this.#end();
  };
  readonly #onClose = (): void => {
    this.front.forget(this);
    this.#response?.emitClose();
  };
  readonly #onError = (): void => undefined;

  constructor(
    private readonly front: GatewayFront,
    private readonly socket: Socket,
  ) {
    socket.setNoDelay(true);
    socket.on("data", this.#onData);
    socket.on("drain", this.#onDrain);
    socket.on("end", this.#onEnd);
    socket.on("close", this.#onClose);
    // A client reset is the end of its connection, nothing to report.
    socket.on("error", this.#onError);
  }

  #read(chunk: Buffer): void {
    this.#lastActiveAt = Date.now();
    this.#requestStartedAt ??= this.#lastActiveAt;
    this.#chunks.push(chunk);
    this.#length += chunk.length;
    if (this.#response === undefined) this.#next();
  }

  /** Reads the next request from the bytes held, when it is all here: answers it, or hands the connection to node. */
  #next(): void {
    if (this.#length === 0) return;
    if (this.front.closing) {
      this.#handOff();
      return;
    }
    let request = this.#pending;
    if (request === undefined) {
      const { limits } = this.front.options;
      const read = readFrontRequest(this.#joined(), 0, { maxHeadBytes: limits.headerBytes, maxBodyBytes: limits.bodyBytes });
      if (read === "incomplete") return;
      if (read === "head-too-large") {
        this.#refuse(headTooLargeAnswer(this.#headSoFar(), limits.headerBytes));
        return;
      }
      if (read === "other") {
        this.#handOff();
        return;
      }
      request = read;
      this.#pending = read;
    }
    const bodyEnd = request.bodyStart + request.bodyLength;
    // A body in many reads is joined once, when it is all here, not at every read.
    if (this.#length < bodyEnd) return;
    const bytes = this.#joined();
    this.#pending = undefined;
    const body = bytes.subarray(request.bodyStart, bodyEnd);
    if (bodyEnd === bytes.length) {
      this.#chunks = [];
      this.#length = 0;
    } else {
      this.#chunks = [bytes.subarray(bodyEnd)];
      this.#length = bytes.length - bodyEnd;
      // Pipelined requests wait here; reading more of them now would only fill memory.
      this.socket.pause();
    }
    const { gateway, log, server } = this.front.options;
    const response = new FrontResponse(this.socket, request.keepAlive && !this.#clientEnded, Math.floor(server.keepAliveTimeout / 1000), this);
    this.#response = response;
    const id = requestIdFrom(request.headers["x-request-id"]);
    void gateway.handle(request.endpoint, { id, headers: request.headers, body, response, log: { warn: (facts, message) => log.warn({ reqId: id, ...facts }, message) } });
  }

  #joined(): Buffer {
    if (this.#chunks.length > 1) this.#chunks = [Buffer.concat(this.#chunks, this.#length)];
    return this.#chunks[0] as Buffer;
  }

  /** FrontResponse: the answer has left. */
  answered(keepAlive: boolean): void {
    this.#response = undefined;
    this.#lastActiveAt = Date.now();
    this.#requestStartedAt = this.#length === 0 ? undefined : this.#lastActiveAt;
    if (!keepAlive || this.#clientEnded || this.front.closing) {
      this.#end();
      return;
    }
    if (this.#length > 0) {
      this.socket.resume();
      // The next request is read after this answer's own work is done, not inside its end().
      setImmediate(() => {
        if (this.#response === undefined) this.#next();
      });
    }
  }

  /**
   * The server is closing: an idle connection ends now, and so does one
   * whose request has only partly arrived (answered 503: it was never taken
   * on, and waiting for the rest would hold the server's close open).
   */
  closeWhenIdle(): void {
    if (this.#response !== undefined) return;
    if (this.#length === 0) {
      this.#end();
      return;
    }
    this.front.forget(this);
    this.socket.end("HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\nretry-after: 1\r\ncontent-length: 0\r\n\r\n");
  }

  expire(now: number, keepAliveMs: number, headersMs: number, requestMs: number): void {
    if (this.#response !== undefined) return;
    const started = this.#requestStartedAt;
    if (started === undefined) {
      if (keepAliveMs > 0 && now - this.#lastActiveAt >= keepAliveMs) this.#end();
      return;
    }
    // Slow to send its request (a head that never ends, a body that trickles): answered 408, as node does.
    const limit = this.#pending === undefined ? headersMs : requestMs;
    if (limit > 0 && now - started >= limit) this.#refuse(requestTimeoutAnswer(this.#headSoFar(), limit));
  }

  /** The start of what was read, enough for the request line: a refusal's shape follows the path it names. */
  #headSoFar(): string {
    return this.#length === 0 ? "" : this.#joined().toString("latin1", 0, Math.min(this.#length, 256));
  }

  /** Answers a request the front will not read on (too slow, too large) and closes its connection: what follows cannot be framed. */
  #refuse(answer: string): void {
    this.front.forget(this);
    this.#chunks = [];
    this.#length = 0;
    // What the client still sends is read and dropped, so its kernel does not reset the connection before the answer is read.
    this.socket.removeListener("data", this.#onData);
    this.socket.on("data", () => undefined);
    this.socket.end(answer);
    // The port keeps sockets half open (allowHalfOpen): one whose client never closes is not left to hold a connection slot.
    setTimeout(() => this.socket.destroy(), refusalGraceMs).unref();
  }

  #end(): void {
    this.front.forget(this);
    this.socket.end();
  }

  /** Node's server takes the connection from here, with every byte read so far, as if it had read them itself. */
  #handOff(): void {
    this.front.forget(this);
    const socket = this.socket;
    socket.removeListener("data", this.#onData);
    socket.removeListener("drain", this.#onDrain);
    socket.removeListener("end", this.#onEnd);
    socket.removeListener("close", this.#onClose);
    socket.removeListener("error", this.#onError);
    socket.pause();
    if (this.#length > 0) socket.unshift(this.#joined());
    this.#chunks = [];
    this.#length = 0;
    this.front.options.gateway.metrics.handOffs += 1;
    this.front.options.handOff(socket);
    // Node reads the socket once its listeners are on; the bytes put back come first.
    process.nextTick(() => socket.resume());
  }
}
